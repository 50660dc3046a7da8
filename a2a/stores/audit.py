"""Audit records (``bus.audit``'s wire object): one per A2A exchange, published on
``a2a.<ns>.audit.<agent>``.

A JetStream stream (``A2A_AUDIT_<ns>``, created by every runtime that finds JetStream)
keeps them; :func:`read_audit` reads them back with filters. The free text of a record
(objective, error message, the capabilities a call was routed by) is redacted before it is
written; parameters and results never are written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import anyio
import msgspec

from bus.audit import AuditRecord as AuditRecord
from bus.audit import decode_audit_line, encode_audit_lines
from bus.errors import A2AError, Outcome, outcome_of
from bus.link import Link
from bus.rejects import Rejects
from bus.subjects import Subjects
from bus.wire import PROTOCOL_VERSION, Envelope
from transports import NatsTransport, TransportError
from transports.jetstream import ensure_stream, read_stream

from ..delegation.redact import Redactor

__all__ = [
    "AUDIT_MAX_AGE",
    "AuditFilter",
    "AuditLog",
    "AuditRecord",
    "callee_record",
    "caller_record",
    "decode_records",
    "ensure_audit_stream",
    "read_audit",
    "stream_name",
]

AUDIT_MAX_AGE = 7 * 24 * 3600.0

log = logging.getLogger("a2a.audit")


def stream_name(namespace: str) -> str:
    return Subjects(namespace).audit_stream


def callee_record(
    env: Envelope,
    agent: str,
    instance: str,
    seconds: float,
    error: A2AError | None,
    tokens: int = 0,
    tools: Sequence[str] = (),
) -> AuditRecord:
    """The callee's record of a request it received and handled for ``seconds`` until now,
    with the ``tokens`` it reported and the ``tools`` it used.

    Built with the always-present fields and then the optional ones that are set: msgspec
    constructs a struct several times faster from up to 15 keyword arguments than from more.
    """
    meta = env.metadata
    record = AuditRecord(
        request_id=meta.key,
        conversation_id=env.conversation_id,
        origin=env.source_agent_id,
        target=agent,
        action=env.payload.action,
        outcome="ok" if error is None else outcome_of(error),
        side="callee",
        started_at=int((time.time() - seconds) * 1000),
        duration_ms=int(seconds * 1_000_000) / 1000,
        hop=meta.hop_count,
        depth=meta.depth,
        instance=instance,
    )
    if env.user_id is not None:
        record.user_id = env.user_id
    if meta.parent_id is not None:
        record.parent_id = meta.parent_id
    if meta.correlation_id != record.request_id:
        record.correlation_id = meta.correlation_id
    if env.required_capabilities:
        record.routed_by = ",".join(env.required_capabilities)
    if env.delegation is not None and env.delegation.objective:
        record.objective = env.delegation.objective
    if tokens:
        record.tokens = tokens
    if tools:
        record.tools = list(tools)
    if error is not None:
        _failed(record, error)
    return record


def caller_record(
    env: Envelope,
    capabilities: Sequence[str],
    instance: str | None,
    seconds: float,
    error: A2AError,
    hop: int,
) -> AuditRecord:
    """The caller's record of a call no callee answered."""
    meta = env.metadata
    target = env.target_agent_id
    record = AuditRecord(
        request_id=meta.key,
        conversation_id=env.conversation_id,
        origin=env.source_agent_id,
        target=target if isinstance(target, str) else ",".join(target),
        action=env.payload.action,
        outcome=outcome_of(error),
        side="caller",
        started_at=meta.timestamp,
        duration_ms=int(seconds * 1_000_000) / 1000,
        hop=hop,
        depth=meta.depth,
        instance=instance,
        user_id=env.user_id,
        parent_id=meta.parent_id,
    )
    if meta.correlation_id != record.request_id:
        record.correlation_id = meta.correlation_id
    if capabilities:
        record.routed_by = ",".join(capabilities)
    _failed(record, error)
    return record


def _failed(record: AuditRecord, error: A2AError) -> None:
    record.error_code = error.code
    record.error_message = error.message
    record.error_agent = error.agent


_encoder = msgspec.json.Encoder()


class AuditLog:
    """Publishes audit records in batches; a failure to publish is logged, never raised into a call.

    :meth:`emit` only encodes a record and appends it to its agent's batch: no await, no
    I/O, so a reply never waits on auditing. :meth:`run` publishes each batch as one
    newline-delimited JSON message every ``flush_interval`` seconds, or as soon as one
    fills, so the message server stores one message per batch rather than per exchange.
    Batches that cannot be published (the server is away) are dropped and counted.
    """

    def __init__(
        self,
        link: Link,
        *,
        enabled: bool = True,
        redactor: Redactor | None = None,
        flush_interval: float = 0.05,
        batch_bytes: int = 128 * 1024,
    ) -> None:
        self.link = link
        self.enabled = enabled
        self.redactor = redactor or Redactor()
        self.flush_interval = flush_interval
        self.batch_bytes = min(batch_bytes, link.max_payload // 2) if enabled else batch_bytes
        self.dropped = 0
        self.stream: str | None = None
        self._pending: list[AuditRecord] = []
        # A typical record is a few hundred bytes; a batch this long fills about batch_bytes.
        self._batch_records = max(1, self.batch_bytes // 256)
        self._subjects: dict[str, str] = {}
        self._full = anyio.Event()

    async def ensure_stream(self) -> bool:
        """Create (or update) the JetStream stream that keeps this namespace's records."""
        transport = self.link.transport
        if not self.enabled or not isinstance(transport, NatsTransport):
            return False
        try:
            name = await ensure_audit_stream(transport, self.link.subjects.namespace)
        except TransportError as exc:
            log.warning(
                "no JetStream reachable from this server (%s); audit records are published, and "
                "kept only if a stream elsewhere takes them (a leaf node's records reach its hub's)",
                exc,
            )
            return False
        self.stream = name
        return True

    def emit(self, record: AuditRecord) -> None:
        """Queue one record (redacted) for the next batch; it is encoded with the batch."""
        if not self.enabled:
            return
        # Free text only: the other fields are ids, names and capability ids, whose
        # characters the runtime restricts (a capability id cannot hold a secret's syntax
        # any more than an agent name can), and this runs for every exchange.
        redact = self.redactor.redact
        if record.objective:
            record.objective = redact(record.objective)
        if record.error_message:
            record.error_message = redact(record.error_message)
        pending = self._pending
        pending.append(record)
        if len(pending) >= self._batch_records:
            self._full.set()

    async def run(self) -> None:
        """Publish batches every ``flush_interval`` seconds, or when they fill, until cancelled."""
        while True:
            with anyio.move_on_after(self.flush_interval):
                await self._full.wait()
            self._full = anyio.Event()
            await self.flush()

    async def flush(self) -> None:
        """Publish what is queued: one message per agent (newline-delimited JSON), and one per
        agent for the records of calls still running."""
        pending, self._pending = self._pending, []
        batches: dict[str, list[AuditRecord]] = {}
        for record in pending:
            token = record.target if record.side == "callee" else record.origin
            if record.outcome == "running":  # a call still running: its own subject, not kept
                token = "." + token
            batch = batches.get(token)
            if batch is None:
                batch = batches[token] = []
            batch.append(record)
        for token, records in batches.items():
            subject = self._subjects.get(token)
            if subject is None:
                subjects = self.link.subjects
                subject = subjects.running(token[1:]) if token[0] == "." else subjects.audit(token)
                self._subjects[token] = subject
            await self._publish(subject, records)

    async def _publish(self, subject: str, records: list[AuditRecord]) -> None:
        # One encoder call for the batch; halved when unusually long records overfill it.
        if self.link.peer_protocol == PROTOCOL_VERSION:  # for readers before 1.4
            data = _encoder.encode_lines(records)
        else:
            data = encode_audit_lines(records, elide=self.link.elides)
        if len(data) > self.batch_bytes and len(records) > 1:
            half = len(records) // 2
            await self._publish(subject, records[:half])
            await self._publish(subject, records[half:])
            return
        try:
            await self.link.publish(subject, data)
        except A2AError as exc:
            self.dropped += len(records)
            log.warning("%d audit records dropped: %s", len(records), exc)


async def ensure_audit_stream(transport: NatsTransport, namespace: str) -> str:
    """Create (or update) the stream that keeps a namespace's audit records; returns its name.

    Raises:
        TransportError: no JetStream, or this user may not create the stream.
    """
    subjects = Subjects(namespace)
    name = subjects.audit_stream
    await ensure_stream(transport, name, [subjects.audit_all], max_age=AUDIT_MAX_AGE)
    return name


_rejects = Rejects(log, "audit record")


def decode_records(data: bytes, subject: str | None = None) -> list[AuditRecord]:
    """The records of one audit message (newline-delimited JSON); malformed lines are skipped.

    With the ``subject`` the message came on (``a2a.<ns>.audit.<agent>``), a record is kept
    only if that agent wrote it: the callee of a callee record, the origin of a caller
    record. The server lets each user publish only on its own audit subject, so a record
    claiming another agent's exchange is a forgery and is skipped (counted, logged).
    """
    author = subject[subject.rfind(".") + 1 :] if subject else None
    records = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = decode_audit_line(line)
        except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError, ValueError):
            _rejects("malformed", line[:100])
            continue
        if author is not None and author != (record.target if record.side == "callee" else record.origin):
            _rejects(
                "not its author's", f"{record.side} record {record.origin} -> {record.target} on {subject}"
            )
            continue
        records.append(record)
    return records


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
    """Records kept in the namespace's stream, oldest first, that ``match`` accepts (the last ``limit``).

    Raises:
        TransportError: the stream does not exist (no runtime with auditing ran yet) or
            the server did not answer.
    """
    found: list[AuditRecord] = []
    subjects = Subjects(namespace)
    async for on, data in read_stream(transport, subjects.audit_stream, subjects.audit_all, timeout=timeout):
        found.extend(r for r in decode_records(data, on) if match(r))
    return found[-limit:] if limit else found
