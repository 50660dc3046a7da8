"""Conversation summaries: what a delegation's ``ContextFilter(include_summary=True)`` reads.

A conversation's summary is :func:`summarise` of its goal and latest messages, made when it
is read (:meth:`a2a.stores.history.HistoryStore.summary`): deterministic, no model, bounded
length, and nothing to write per captured call. A runtime given a summariser instead keeps
each conversation's summary up to date as calls are captured into its history
(:mod:`a2a.stores.capture`); readers get that one while it covers every exchange written.
A summariser is any callable that takes a :class:`SummaryInput` and returns the text, or an
awaitable of it, so a model can write it::

    async def by_model(digest: SummaryInput) -> str:
        return await llm.complete("Summarise:\\n" + "\\n".join(m.content for m in digest.messages))

    async with Runtime(settings, summariser=by_model) as rt: ...
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import msgspec

from bus.handoff import ChatMessage

__all__ = [
    "REQUEST_ROLES",
    "SUMMARY_CHARS",
    "SUMMARY_WINDOW",
    "Summariser",
    "SummaryInput",
    "exchanges",
    "summarise",
]

SUMMARY_CHARS = 1200
"""Longest summary kept (a summariser's longer text is cut)."""
SUMMARY_WINDOW = 20
"""Latest messages a summary is made of."""
REQUEST_ROLES = ("user", "agent")
"""Roles of a captured request: ``user`` from outside any agent, ``agent`` from an agent."""


class SummaryInput(msgspec.Struct, kw_only=True):
    """What a summariser is given for one conversation."""

    conversation_id: str
    goal: str | None
    """The first request a user made in the conversation (kept even once its message is trimmed)."""
    messages: list[ChatMessage]
    """The latest messages, oldest first (redacted as stored)."""
    previous: str | None = None
    """The summary kept so far, if any."""
    writes: int = 0
    """Exchanges written to the conversation when this was read: a summary of it is kept
    only over one of fewer (a slow summariser's never replaces a newer one's)."""


Summariser = Callable[[SummaryInput], str | Awaitable[str]]
"""Writes a conversation's summary; plain or async (a model call)."""


def _line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def exchanges(messages: Sequence[ChatMessage]) -> list[tuple[ChatMessage, ChatMessage | None]]:
    """Messages paired as (request, answer): a request followed by an ``assistant`` message is
    one exchange; any other message stands alone (its answer None)."""
    pairs: list[tuple[ChatMessage, ChatMessage | None]] = []
    i = 0
    while i < len(messages):
        first = messages[i]
        following = messages[i + 1] if i + 1 < len(messages) else None
        if first.role in REQUEST_ROLES and following is not None and following.role == "assistant":
            pairs.append((first, following))
            i += 2
        else:
            pairs.append((first, None))
            i += 1
    return pairs


def summarise(
    digest: SummaryInput, *, last: int = 5, line_chars: int = 160, limit: int = SUMMARY_CHARS
) -> str:
    """The goal (the conversation's first user request) and the ``last`` exchanges, one line each.

    The same input always gives the same text; it is at most ``limit`` characters long.
    """
    goal = digest.goal
    if goal is None:
        goal = next((m.content for m in digest.messages if m.role == "user"), None)
    lines = [f"Goal: {_line(goal, 300)}"] if goal else []
    recent = exchanges(digest.messages)[-last:] if last > 0 else []
    if recent:
        lines.append(f"Last {len(recent)} exchange{'s' if len(recent) != 1 else ''}:")
    half = max(20, line_chars // 2)
    for ask, answer in recent:
        who = ask.name or ask.role
        if answer is None:
            lines.append(f"- {who}: {_line(ask.content, line_chars)}")
        else:
            lines.append(
                f"- {who} -> {answer.name or answer.role}: "
                f"{_line(ask.content, half)} => {_line(answer.content, half)}"
            )
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"
