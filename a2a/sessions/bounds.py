"""The history a local agent is given for a turn, within the turn's bounds.

The most recent turns that fit ``max_history_turns`` and ``max_history_chars`` go as they
are; older ones are summarised into ``history_summary`` deterministically (the same turns
always give the same summary: no model is asked), and the latest remote message goes
verbatim as ``remote_message`` whatever its length.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..prompt.frames import Constraints, HistoryTurn, bound_history
from .model import Turn

__all__ = ["SUMMARY_CHARS", "bounded", "summarise"]

SUMMARY_CHARS = 2000
"""The longest summary; each summarised turn gets an equal share of it."""
_LEAD = 160  # characters of one turn's text in the summary, at most


def bounded(turns: Sequence[Turn], constraints: Constraints) -> tuple[str, list[HistoryTurn], str | None]:
    """``(remote_message, history, history_summary)`` for the next local turn.

    The latest remote reply is the ``remote_message`` and is not repeated in ``history``;
    ``history_summary`` is None when nothing had to be left out.
    """
    last_remote = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == "remote_agent"), None)
    remote_message = "" if last_remote is None else turns[last_remote].text
    earlier = [HistoryTurn(role=t.role, text=t.text) for i, t in enumerate(turns) if i != last_remote]
    kept = bound_history(earlier, constraints.max_history_turns, constraints.max_history_chars)
    dropped = earlier[: len(earlier) - len(kept)]
    return remote_message, kept, summarise(dropped) if dropped else None


def summarise(turns: Sequence[HistoryTurn]) -> str:
    """A compact, deterministic account of ``turns``: who spoke, and how each message began."""
    head = f"{len(turns)} earlier turn{'s' if len(turns) != 1 else ''} summarised:"
    share = max(40, min(_LEAD, (SUMMARY_CHARS - len(head)) // max(1, len(turns)) - 20))
    lines = [head]
    for turn in turns:
        text = " ".join(turn.text.split())
        lead = text if len(text) <= share else text[: share - 1].rstrip() + "…"
        lines.append(f"- {turn.role}: {lead}")
    summary = "\n".join(lines)
    return summary if len(summary) <= SUMMARY_CHARS else summary[: SUMMARY_CHARS - 1] + "…"
