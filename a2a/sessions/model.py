"""What a session is: its settings, its turns, the state it is in and how it got there.

Field names on the wire are camelCase like the rest of the runtime's JSON; the names of
the limits and the policy are the seed's own (``maxTurns``, ``allowSharedAgentCalls``...).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from bus.wire import Wire

from ..prompt.frames import Constraints

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "Adoption",
    "Ending",
    "Limits",
    "Mode",
    "Role",
    "SentBy",
    "Session",
    "SessionEvent",
    "State",
    "Transition",
    "Turn",
]

State = Literal[
    "idle",
    "planning",
    "waiting_local",
    "ready_to_send",
    "waiting_remote",
    "processing_remote",
    "completed",
    "paused",
    "error",
    "stopped",
]
TERMINAL: frozenset[str] = frozenset({"completed", "error", "stopped"})
ACTIVE: frozenset[str] = frozenset({"planning", "waiting_local", "waiting_remote", "processing_remote"})
"""States in which the owner is working (a turn is in flight)."""

Mode = Literal["manual", "semi_auto", "full_auto"]
Role = Literal["local_agent", "remote_agent", "user"]
SentBy = Literal["auto_sent", "user_approved", "user_edited", "user_written"]
Count = Annotated[int, Meta(ge=0)]
Text = Annotated[str, Meta(max_length=1 << 20)]


class Limits(Wire):
    """The seed's mandatory hard limits of one run."""

    max_turns: Annotated[int, Meta(ge=1, le=1000)] = 8
    """Messages sent to the remote agent."""
    max_duration_ms: Annotated[int, Meta(ge=1, le=7 * 24 * 3600 * 1000)] = 10 * 60 * 1000
    max_failures: Annotated[int, Meta(ge=1, le=100)] = 3
    """Consecutive failed turns."""
    max_tokens_budget: Annotated[int, Meta(ge=1, le=10**12)] | None = None
    """Tokens the local and remote agents may use together (as they report them)."""


class Turn(Wire):
    """One message of the session: a local draft that was sent, a remote reply, or the person's words."""

    index: Count
    role: Role
    text: Text
    at: float
    sent_by: SentBy | None = None
    """How an outbound message left: sent by itself, approved by the person, or written by them."""
    tokens: Count = 0
    duration_ms: Count = 0
    resent: bool = False
    """Sent again by a process that adopted the session while the message was in flight: the
    remote agent may have received it twice."""


class Transition(Wire):
    """One change of state, recorded in order."""

    to: State
    at: float
    source: State | None = None
    why: str = ""


class Ending(Wire):
    """Why a run ended or stopped: ``kind`` is ``done``, ``limit``, ``user``, ``failure`` or ``policy``."""

    kind: Literal["done", "limit", "user", "failure", "policy"]
    message: str
    limit: str | None = None
    """The limit that stopped the run (``maxTurns``, ``maxDurationMs``...), for the banner."""


class Adoption(Wire):
    """A process taking over the loop of a session whose owner was gone."""

    at: float
    by: str
    """The new owner (``host/pid/id`` of the process)."""
    previous: str
    """The owner that was gone."""
    state: State
    """Where the loop stood."""
    rerun: Literal["local", "remote"] | None = None
    """The step that was in flight and runs again: the local agent is asked again for the same
    turn, or the message is sent again (the turn at ``turn``, marked ``resent``)."""
    turn: Count | None = None
    """The index of the turn sent again (``rerun`` remote)."""


class Session(Wire):
    """A local agent working on an objective with a remote agent, watched by a person."""

    id: str
    user_id: str
    profile_id: str
    """The local agent (its bus name) that drafts the outbound messages."""
    remote: str
    """The remote agent (its bus name) the messages go to."""
    objective: Text
    mode: Mode = "manual"
    state: State = "idle"
    limits: Limits = msgspec.field(default_factory=Limits)
    constraints: Constraints = msgspec.field(default_factory=Constraints)
    remote_action: str = "run"
    turns: list[Turn] = []
    draft: Text | None = None
    """The local agent's draft waiting to be sent (in ``ready_to_send``)."""
    draft_by: SentBy | None = None
    """Who let the draft go: ``user_approved``, ``user_edited`` (approved once changed) or
    ``user_written`` (None: the mode decides)."""
    review: str | None = None
    """Why the draft waits for the person (manual mode, or the semi-auto rule that asked)."""
    in_flight: Literal["local", "remote"] | None = None
    """The step under way (a paused session resumes into it, so its outcome is not lost)."""
    takeover: bool = False
    """The person writes the next outbound message (Take over)."""
    failures: Count = 0
    """Consecutive failed turns."""
    tokens_used: Count = 0
    started_at: float = 0.0
    updated_at: float = 0.0
    ending: Ending | None = None
    last_error: str | None = None
    trace_id: str = ""
    owner: str = ""
    """The process that runs the loop (``host/pid/id``)."""
    version: Count = 0
    transitions: list[Transition] = []
    adoptions: list[Adoption] = []
    """The takeovers of the loop by another process, oldest first (the latest few)."""

    @property
    def sent(self) -> int:
        """Messages sent to the remote agent so far."""
        return sum(1 for t in self.turns if t.role != "remote_agent")


class SessionEvent(Wire):
    """What is published on every change, for live views: the session as it now is."""

    kind: Literal["changed", "removed"]
    session: Session
