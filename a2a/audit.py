"""Audit records: one per A2A exchange, published on ``a2a.<ns>.audit.<agent>``.

A JetStream stream (``A2A_AUDIT_<ns>``, created by every runtime that finds JetStream)
keeps them; :func:`read_audit` reads them back with filters. Objectives and error
messages are redacted before they are written; parameters and results never are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

import anyio
import msgspec
import nats.errors
import nats.js.errors
from nats.js.api import DeliverPolicy, StorageType, StreamConfig

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
from transports import NatsTransport

from .redact import Redactor

__all__ = [
    "AUDIT_MAX_AGE",
    "AuditFilter",
    "AuditLog",
    "AuditRecord",
    "Outcome",
    "decode_records",
    "outcome_of",
    "read_audit",
    "stream_name",
]

AUDIT_MAX_AGE = 7 * 24 * 3600.0


def stream_name(namespace: str) -> str:
    return f"A2A_AUDIT_{namespace}"


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
_decoder = msgspec.json.Decoder(AuditRecord)


class AuditLog:
    """Publishes audit records in batches; a failure to publish is logged, never raised into a call.

    Records are encoded at once and published as newline-delimited JSON, one message per
    agent every ``flush_interval`` seconds (or sooner when a batch fills), so auditing
    costs the message server one stored message per batch rather than per exchange.
    :meth:`run` does the periodic flushing; :meth:`flush` empties the buffer.
    """

    def __init__(
        self,
        bus: Bus,
        *,
        enabled: bool = True,
        redactor: Redactor | None = None,
        flush_interval: float = 0.05,
        batch_bytes: int = 128 * 1024,
    ) -> None:
        self.bus = bus
        self.enabled = enabled
        self.redactor = redactor or Redactor()
        self.flush_interval = flush_interval
        self.batch_bytes = min(batch_bytes, bus.max_payload // 2) if enabled else batch_bytes
        self.dropped = 0
        self.stream: str | None = None
        self._batches: dict[str, list[bytes]] = {}
        self._sizes: dict[str, int] = {}
        self._subjects: dict[str, str] = {}

    async def ensure_stream(self) -> bool:
        """Create (or update) the JetStream stream that keeps this namespace's records."""
        transport = self.bus.transport
        if not self.enabled or not isinstance(transport, NatsTransport):
            return False
        name = stream_name(self.bus.subjects.namespace)
        config = StreamConfig(
            name=name,
            subjects=[self.bus.subjects.audit_all],
            storage=StorageType.FILE,
            max_age=AUDIT_MAX_AGE,
        )
        js = transport.nc.jetstream(timeout=2.0)
        try:
            try:
                await js.add_stream(config)
            except nats.js.errors.BadRequestError:
                await js.update_stream(config)  # exists with another configuration
        except (nats.errors.Error, OSError) as exc:
            log.warning("audit records are published but not kept: no JetStream stream (%s)", exc)
            return False
        self.stream = name
        return True

    async def emit(self, record: AuditRecord) -> None:
        """Queue one record (redacted) for the next batch."""
        if not self.enabled:
            return
        if record.objective:
            record.objective = self.redactor.redact(record.objective)
        if record.error_message:
            record.error_message = self.redactor.redact(record.error_message)
        token = _token(record)
        data = _encoder.encode(record)
        batch = self._batches.setdefault(token, [])
        batch.append(data)
        size = self._sizes[token] = self._sizes.get(token, 0) + len(data) + 1
        if size >= self.batch_bytes:
            await self._publish(token)

    async def run(self) -> None:
        """Flush every ``flush_interval`` seconds until cancelled."""
        while True:
            await anyio.sleep(self.flush_interval)
            await self.flush()

    async def flush(self) -> None:
        for token in list(self._batches):
            await self._publish(token)

    async def _publish(self, token: str) -> None:
        batch = self._batches.pop(token, None)
        self._sizes.pop(token, None)
        if not batch:
            return
        subject = self._subjects.get(token)
        if subject is None:
            subject = self._subjects[token] = self.bus.subjects.audit(token)
        try:
            await self.bus.publish_raw(subject, b"\n".join(batch))
        except A2AError as exc:
            self.dropped += len(batch)
            log.warning("%d audit records dropped: %s", len(batch), exc)


def decode_records(data: bytes) -> list[AuditRecord]:
    """The records of one audit message (newline-delimited JSON); malformed lines are skipped."""
    records = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            records.append(_decoder.decode(line))
        except msgspec.MsgspecError:
            log.warning("skipping a malformed audit record")
    return records


def _token(record: AuditRecord) -> str:
    return record.target if record.side == "callee" else record.origin


class AuditFilter(msgspec.Struct, kw_only=True, frozen=True):
    """Which records :func:`read_audit` returns; unset fields match everything."""

    agent: str | None = None
    """Origin or target."""
    user_id: str | None = None
    conversation_id: str | None = None
    outcome: Outcome | None = None

    def __call__(self, r: AuditRecord) -> bool:
        return (
            (self.agent is None or self.agent in (r.origin, r.target))
            and (self.user_id is None or r.user_id == self.user_id)
            and (self.conversation_id is None or r.conversation_id == self.conversation_id)
            and (self.outcome is None or r.outcome == self.outcome)
        )


async def read_audit(
    transport: NatsTransport,
    namespace: str,
    match: Callable[[AuditRecord], bool] = AuditFilter(),
    *,
    limit: int | None = None,
    timeout: float = 5.0,
) -> list[AuditRecord]:
    """Records kept in the namespace's stream, oldest first, that ``match`` accepts (the last ``limit``)."""
    js = transport.nc.jetstream(timeout=timeout)
    info = await js.stream_info(stream_name(namespace))
    total = info.state.messages
    found: list[AuditRecord] = []
    if not total:
        return found
    sub = await js.subscribe(
        f"a2a.{namespace}.audit.>", ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
    )
    try:
        while True:
            msg = await sub.next_msg(timeout=timeout)
            found.extend(r for r in decode_records(msg.data) if match(r))
            if msg.metadata.num_pending == 0:
                break
    finally:
        await sub.unsubscribe()
    return found[-limit:] if limit else found
