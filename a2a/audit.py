"""Audit records: one per A2A exchange, published on ``a2a.<ns>.audit.<agent>``."""

from __future__ import annotations

import logging
from typing import Literal

import msgspec

from bus import Bus
from bus.errors import (
    A2AError,
    Cancelled,
    InvalidEnvelope,
    InvalidParams,
    LimitExceeded,
    PermissionDenied,
    UnknownAction,
    UnsupportedVersion,
)
from bus.wire import Wire

__all__ = ["AuditLog", "AuditRecord", "Outcome", "outcome_of"]

log = logging.getLogger("a2a.audit")

Outcome = Literal["ok", "error", "refused", "cancelled"]
Side = Literal["caller", "callee"]

_REFUSALS = (
    LimitExceeded,
    PermissionDenied,
    InvalidEnvelope,
    InvalidParams,
    UnknownAction,
    UnsupportedVersion,
)


def outcome_of(error: A2AError | None) -> Outcome:
    if error is None:
        return "ok"
    if isinstance(error, Cancelled):
        return "cancelled"
    if isinstance(error, _REFUSALS):
        return "refused"
    return "error"


class AuditRecord(Wire):
    """Who asked whom to do what, for which user, and how it ended.

    The callee writes the record of every request it receives; the caller writes one
    only when no callee answered (refused before sending, no responders, deadline).
    """

    request_id: str
    conversation_id: str
    origin: str
    target: str
    action: str
    outcome: Outcome
    side: Side
    started_at: int
    """Milliseconds since the epoch."""
    duration_ms: float
    hop: int = 0
    depth: int = 0
    instance: str | None = None
    user_id: str | None = None
    parent_id: str | None = None
    objective: str | None = None
    routed_by: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    error_agent: str | None = None


_encoder = msgspec.json.Encoder()


class AuditLog:
    """Publishes audit records; a failure to publish is logged, never raised into a call."""

    def __init__(self, bus: Bus, *, enabled: bool = True) -> None:
        self.bus = bus
        self.enabled = enabled
        self.dropped = 0

    async def emit(self, record: AuditRecord) -> None:
        if not self.enabled:
            return
        try:
            await self.bus.publish_raw(
                self.bus.subjects.audit(_token(record)), _encoder.encode(record)
            )
        except A2AError as exc:
            self.dropped += 1
            log.warning("audit record %s dropped: %s", record.request_id, exc)


def _token(record: AuditRecord) -> str:
    return record.target if record.side == "callee" else record.origin
