"""What a step's outcome does to a session: pure functions ``Session -> Session`` that the
runner applies by compare-and-set.

Each applies only to the step it belongs to (``in_flight``): an outcome that arrives after
the person paused is kept and the session stays paused; one that arrives after a stop,
or for a step that is no longer in flight, changes nothing.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from bus.errors import (
    A2AError,
    AgentLost,
    BudgetExceeded,
    LimitExceeded,
    NoResponders,
    Overloaded,
    PermissionDenied,
    Unavailable,
)

from .machine import move
from .model import Ending, Role, SentBy, Session, Turn

__all__ = ["draft_received", "local_failed", "remote_failed", "reply_received", "sending", "withdrawn"]

FATAL = (Unavailable, NoResponders, AgentLost)
"""A local agent that cannot be reached: the seed ends the run in ``error`` (user action needed)."""


def _step(s: Session, step: str) -> bool:
    return s.in_flight == step and s.state in (f"waiting_{step}", "paused")


def _too_many(n: int, error: A2AError, message: str) -> Ending:
    turns = f"{n} failed turn{'s' if n != 1 else ''} in a row"
    return Ending(kind="limit", limit="maxFailures", message=f"{turns}: {error.code}: {message}")


def draft_received(s: Session, draft: str, review: str | None, tokens: int, elapsed_ms: int) -> Session:
    """The local agent's draft (already redacted), or an empty one: it has nothing more to send."""
    if not _step(s, "local"):
        return s
    fields: dict[str, Any] = {"tokens_used": s.tokens_used + tokens, "failures": 0, "in_flight": None}
    if not draft.strip():
        if s.state == "paused":
            return msgspec.structs.replace(s, **fields)
        done = Ending(kind="done", message="the local agent has nothing more to send")
        return move(s, "completed", "the local agent is done", ending=done, **fields)
    fields |= {"draft": draft, "review": review}
    if s.takeover:  # the person writes now: the draft waits for them, never sent by itself
        fields["review"] = "take over: the local agent's draft is set aside; write the next message"
    if s.state == "paused":
        return msgspec.structs.replace(s, **fields)
    return move(s, "ready_to_send", f"draft in {elapsed_ms} ms", **fields)


def local_failed(s: Session, error: A2AError, message: str, tokens: int = 0) -> Session:
    """A failed local turn: asked again, or the run ends (unreachable agent, too many failures)."""
    if not _step(s, "local"):
        return s
    failures = s.failures + 1
    fields: dict[str, Any] = {
        "failures": failures,
        "last_error": f"{error.code}: {message}",
        "tokens_used": s.tokens_used + tokens,
        "in_flight": None,
    }
    if isinstance(error, FATAL):
        ending = Ending(kind="failure", message=f"the local agent cannot be reached: {error.code}: {message}")
        return move(s, "error", ending.message, ending=ending, **fields)
    if failures >= s.limits.max_failures:
        ending = _too_many(failures, error, message)
        return move(s, "error", ending.message, ending=ending, **fields)
    if s.state == "paused":
        return msgspec.structs.replace(s, **fields)
    return move(s, "planning", f"local turn failed: {error.code}", **fields)


def sending(s: Session, draft: str, sent_by: SentBy) -> Session:
    """The draft leaves: recorded as a turn, the remote step in flight."""
    if s.state != "ready_to_send" or s.draft != draft or s.review is not None:
        return s
    role: Role = "user" if sent_by == "user_written" else "local_agent"
    last = s.adoptions[-1] if s.adoptions else None
    resent = last is not None and last.rerun == "remote" and last.turn == len(s.turns)
    turn = Turn(index=len(s.turns), role=role, text=draft, at=time.time(), sent_by=sent_by, resent=resent)
    return move(
        s,
        "waiting_remote",
        f"sending ({sent_by})",
        turns=[*s.turns, turn],
        draft=None,
        draft_by=None,
        in_flight="remote",
    )


def withdrawn(s: Session, draft: str) -> Session:
    """The person paused before the message left: it waits again, unsent."""
    if not _step(s, "remote") or s.state != "paused":
        return s
    return msgspec.structs.replace(s, turns=_unsent(s, draft), draft=draft, in_flight=None)


def reply_received(s: Session, text: str, tokens: int, elapsed_ms: int) -> Session:
    """The remote agent's answer (already redacted): the next turn, or kept while paused."""
    if not _step(s, "remote"):
        return s
    turn = Turn(
        index=len(s.turns),
        role="remote_agent",
        text=text,
        at=time.time(),
        tokens=tokens,
        duration_ms=elapsed_ms,
    )
    fields = {
        "turns": [*s.turns, turn],
        "tokens_used": s.tokens_used + tokens,
        "failures": 0,
        "in_flight": None,
    }
    if s.state == "paused":
        return msgspec.structs.replace(s, **fields)
    return move(move(s, "processing_remote", f"reply in {elapsed_ms} ms", **fields), "planning", "next turn")


def remote_failed(s: Session, error: A2AError, message: str, draft: str) -> Session:
    """The message did not get an answer: it waits to be sent again, or the run ends.

    A refusal (the policy, a limit of the call tree) ends the run; a busy profile
    (OVERLOADED: its rate or its calls in flight) only waits, without counting a failure.
    """
    if not _step(s, "remote"):
        return s
    busy = isinstance(error, Overloaded)
    refused = isinstance(error, PermissionDenied | LimitExceeded) and not busy
    failures = s.failures if busy else s.failures + 1
    fields: dict[str, Any] = {
        "failures": failures,
        "last_error": f"{error.code}: {message}",
        "turns": _unsent(s, draft),
        "in_flight": None,
        "tokens_used": s.tokens_used + (error.usage.total if error.usage is not None else 0),
    }
    budget = s.limits.max_tokens_budget
    if isinstance(error, BudgetExceeded) and budget is not None:  # what was left did not pay for the reply
        used = fields["tokens_used"]
        ending = Ending(
            kind="limit",
            limit="maxTokensBudget",
            message=f"the run used {used} tokens of {budget}: the remote's reply would have overspent it",
        )
        return move(s, "stopped", ending.message, ending=ending, **fields)
    if refused:
        ending = Ending(kind="policy", message=f"refused: {error.code}: {message}")
        return move(s, "error", ending.message, ending=ending, **fields)
    if failures >= s.limits.max_failures:
        ending = _too_many(failures, error, message)
        return move(s, "error", ending.message, ending=ending, **fields)
    if s.state == "paused":
        return msgspec.structs.replace(s, draft=draft, **fields)
    return move(s, "ready_to_send", f"send failed: {error.code}", draft=draft, **fields)


def _unsent(s: Session, draft: str) -> list[Turn]:
    """The turns without the last one, when it is this draft (it was not delivered)."""
    return (
        s.turns[:-1]
        if s.turns and s.turns[-1].role != "remote_agent" and s.turns[-1].text == draft
        else s.turns
    )
