"""When a draft waits for the person, how an outbound message is labelled, and when a run must stop."""

from __future__ import annotations

import time
from typing import Any

from .model import Ending, SentBy, Session

__all__ = ["limit_hit", "review_reason", "sent_by_of"]


def review_reason(session: Session, draft: str, metrics: dict[str, Any], redacted: str) -> str | None:
    """Why a draft waits for the person before it is sent, or None to send it by itself.

    ``manual`` always asks. ``semi_auto`` asks when the draft holds what the redactor
    would hide (a secret, a token), when the local agent reports a confidence below 0.5,
    or when it used tools for this turn. ``full_auto`` never asks.
    """
    if session.mode == "manual":
        return "manual mode: approve each message"
    if session.mode == "full_auto":
        return None
    if redacted != draft:
        return "the draft contains what looks like a secret"
    confidence = metrics.get("confidence")
    if isinstance(confidence, int | float) and confidence < 0.5:
        return f"the local agent's confidence is low ({confidence:g})"
    rounds = metrics.get("tool_rounds", metrics.get("tool_calls"))
    if isinstance(rounds, int) and rounds > 0:
        return "the local agent used tools for this draft"
    return None


def sent_by_of(session: Session) -> SentBy:
    """How the waiting draft leaves: as the person let it go, else as the mode sends it."""
    return session.draft_by or ("auto_sent" if session.mode != "manual" else "user_approved")


def limit_hit(s: Session) -> Ending | None:
    """The limit that stops the run now, if any (``maxTurns`` only between turns)."""
    lim = s.limits
    if (time.time() - s.started_at) * 1000 > lim.max_duration_ms:
        return Ending(
            kind="limit", limit="maxDurationMs", message=f"the run reached {lim.max_duration_ms} ms"
        )
    if lim.max_tokens_budget is not None and s.tokens_used >= lim.max_tokens_budget:
        message = f"the run used {s.tokens_used} tokens of {lim.max_tokens_budget}"
        return Ending(kind="limit", limit="maxTokensBudget", message=message)
    if s.state == "planning" and s.sent >= lim.max_turns:
        return Ending(
            kind="limit", limit="maxTurns", message=f"{s.sent} messages sent: maxTurns is {lim.max_turns}"
        )
    return None
