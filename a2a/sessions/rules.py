"""When a draft waits for the person, and how an outbound message is labelled."""

from __future__ import annotations

from typing import Any

from .model import SentBy, Session

__all__ = ["review_reason", "sent_by_of"]


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
