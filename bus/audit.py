"""The audit record of one exchange, as published on ``a2a.<ns>.audit.<agent>``.

A wire object (its JSON Schema is ``schemas/audit-record.schema.json``); the runtime
writes and reads these records in ``a2a.stores.audit``.
"""

from __future__ import annotations

from typing import Literal

from .errors import Outcome
from .wire import Wire

__all__ = ["AuditRecord", "Side"]

Side = Literal["caller", "callee"]


class AuditRecord(Wire, gc=False):
    """Who asked whom to do what, for which user, and how it ended.

    The callee writes the record of every request it receives; the caller writes one
    only when no callee answered (refused before sending, no responders, deadline).
    """

    request_id: str
    """The request's own id (each hop has one)."""
    conversation_id: str
    origin: str
    target: str
    action: str
    outcome: Outcome | Literal["running"]
    """How the call ended; ``running`` on a record of a call still running (not kept)."""
    side: Side
    started_at: int
    """Milliseconds since the epoch."""
    duration_ms: float
    hop: int = 0
    depth: int = 0
    instance: str | None = None
    user_id: str | None = None
    parent_id: str | None = None
    """The request id of the request whose handler made this one."""
    correlation_id: str | None = None
    """The call tree's id, the same on every hop; None when it is the request id (a first hop)."""
    objective: str | None = None
    routed_by: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    error_agent: str | None = None
    tokens: int = 0
    """Tokens the handler reported using (its own and its sub-calls'), on the callee's record."""
    tools: list[str] = []
    """The tools the handler was authorized to use and used (``ctx.authorize_tool``), in
    first-use order, on the callee's record."""
