"""The seed's state machine (session overlay), and the one function that moves a session.

::

    idle -> planning -> waiting_local -> ready_to_send -> waiting_remote -> processing_remote
         -> planning (the next turn) ... -> completed | paused | error | stopped

Paused sessions resume where they left (the draft waiting to be sent, or the next
planning step); any non-terminal state may pause, stop or fail.
"""

from __future__ import annotations

import time

import msgspec

from bus.errors import InvalidParams

from .model import TERMINAL, Session, State, Transition

__all__ = ["NEXT", "can_move", "interrupted", "move", "send_again"]

NEXT: dict[str, frozenset[str]] = {
    "idle": frozenset({"planning"}),
    "planning": frozenset({"waiting_local", "ready_to_send", "completed"}),
    "waiting_local": frozenset({"ready_to_send", "planning", "completed"}),
    "ready_to_send": frozenset({"waiting_remote", "planning"}),
    "waiting_remote": frozenset({"processing_remote", "ready_to_send"}),
    "processing_remote": frozenset({"planning", "completed"}),
    "paused": frozenset({"planning", "ready_to_send", "waiting_local", "waiting_remote"}),
}
"""Where each state may go besides paused, error and stopped (any non-terminal state may)."""

MAX_TRANSITIONS = 500
"""Transitions a session keeps (the oldest are dropped; a run of the default limits makes ~50)."""


def can_move(source: str, to: str) -> bool:
    if source in TERMINAL:
        return False
    if to in ("error", "stopped") or (to == "paused" and source != "paused"):
        return True
    return to in NEXT.get(source, frozenset())


def move(session: Session, to: State, why: str = "", **changes: object) -> Session:
    """``session`` in state ``to``, the transition recorded, with ``changes`` applied.

    Raises:
        InvalidParams: the state machine has no such transition (a terminal state, for one).
    """
    if not can_move(session.state, to):
        raise InvalidParams(
            f"session {session.id} cannot go from {session.state} to {to}",
            details={"state": session.state, "to": to},
        )
    now = time.time()
    step = Transition(to=to, at=now, source=session.state, why=why)
    transitions = [*session.transitions[-(MAX_TRANSITIONS - 1) :], step]
    return msgspec.structs.replace(session, state=to, transitions=transitions, updated_at=now, **changes)


def interrupted(s: Session) -> Session:
    """A session whose step was cut off mid-way (its owner gone, or its store unreachable
    between the send and the record of the reply), as its owner goes on: the message in
    flight waits to be sent again (the remote agent may see it twice), or it goes on to the
    next turn."""
    if s.state == "waiting_remote":
        return move(send_again(s), "ready_to_send", "resumed after an interruption")
    if s.state == "processing_remote":
        return move(s, "planning", "resumed after an interruption")
    return s


def send_again(s: Session) -> Session:
    """The message in flight (the last turn, unanswered) taken back as the draft, to leave
    again as it left before (no new approval: the person let it go once)."""
    last = s.turns[-1] if s.turns else None
    if s.in_flight != "remote" or last is None or last.role == "remote_agent":
        return msgspec.structs.replace(s, in_flight=None)
    return msgspec.structs.replace(
        s,
        turns=s.turns[:-1],
        draft=last.text,
        draft_by=None if last.sent_by == "auto_sent" else last.sent_by,
        review=None,
        in_flight=None,
    )
