"""The audit record of one exchange, as published on ``a2a.<ns>.audit.<agent>``.

A wire object (its JSON Schema is ``schemas/audit-record.schema.json``); the runtime
writes and reads these records in ``a2a.stores.audit``. Unless its ``peer_protocol`` is 1.3
(for readers from before 1.4), a runtime writes them in a compact form
(``schemas/audit-record-compact.schema.json``): the same fields with the short keys of
:data:`AUDIT_KEYS`, ``side`` ``callee`` and ``outcome`` ``ok`` left out, and (unless its
``peer_protocol`` is 1.4, for readers from before 1.5) the conversation id too when it is
the request id, as it is on the first hop of a call that names no conversation of its own.
Readers take every form (:func:`decode_audit_line`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from .compact import copier
from .errors import Outcome
from .wire import Wire

__all__ = [
    "AUDIT_KEYS",
    "AuditRecord",
    "CompactAuditRecord",
    "Side",
    "decode_audit_line",
    "encode_audit_lines",
]

Side = Literal["caller", "callee"]


class AuditRecord(Wire, gc=False, kw_only=True):
    """Who asked whom to do what, for which user, and how it ended.

    The callee writes the record of every request it receives; the caller writes one
    only when no callee answered (refused before sending, no responders, deadline).
    """

    request_id: str
    """The request's own id (each hop has one)."""
    origin: str
    target: str
    action: str
    started_at: int
    """Milliseconds since the epoch."""
    duration_ms: float
    conversation_id: str
    outcome: Outcome | Literal["running"]
    """How the call ended; ``running`` on a record of a call still running (not kept)."""
    side: Side
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


AUDIT_KEYS = {
    "request_id": "ri",
    "origin": "o",
    "target": "d",
    "action": "a",
    "started_at": "ts",
    "duration_ms": "ms",
    "conversation_id": "c",
    "outcome": "x",
    "side": "sd",
    "hop": "h",
    "depth": "dp",
    "instance": "in",
    "user_id": "u",
    "parent_id": "pi",
    "correlation_id": "ci",
    "objective": "ob",
    "routed_by": "rb",
    "error_code": "ec",
    "error_message": "em",
    "error_agent": "ea",
    "tokens": "tk",
    "tools": "tl",
}
"""The compact form's key of each field (``requestId`` first, as the full form's)."""


def _compact_fields() -> list[tuple[str, Any, Any] | tuple[str, Any]]:
    defaults: dict[str, Any] = {"side": "callee", "outcome": "ok", "conversation_id": UNSET}
    fields = msgspec.structs.fields(AuditRecord)
    if {f.name for f in fields} != set(AUDIT_KEYS):
        raise TypeError("AUDIT_KEYS do not match the fields of AuditRecord")
    spec: list[tuple[str, Any, Any] | tuple[str, Any]] = []
    for f in fields:
        default, tp = defaults.get(f.name, f.default), f.type
        if f.default_factory is not msgspec.NODEFAULT:
            default = f.default_factory()
        if default is UNSET:  # left out: inferred by the reader (the request id)
            tp = Annotated[tp, Meta(description="Left out (1.5) when it is ri, the request id.")] | UnsetType
        spec.append((f.name, tp) if default is msgspec.NODEFAULT else (f.name, tp, default))
    return spec


CompactAuditRecord: Any = msgspec.defstruct(
    "CompactAuditRecord", _compact_fields(), rename=AUDIT_KEYS, omit_defaults=True, gc=False
)
"""An audit record in the compact form (for its JSON Schema)."""

_to_compact = copier(AuditRecord, CompactAuditRecord)
_from_compact = copier(AuditRecord, AuditRecord)
_encode_lines = msgspec.json.Encoder().encode_lines
_decode = msgspec.json.Decoder(AuditRecord).decode
_decode_compact = msgspec.json.Decoder(CompactAuditRecord).decode
_MARK = b'{"ri":'


def encode_audit_lines(records: list[AuditRecord], *, elide: bool = False) -> bytes:
    """Records in the compact form, one JSON object a line; with ``elide`` (for readers of
    1.5), without a conversation id that is the request id."""
    compact = [_to_compact(r) for r in records]
    if elide:
        for record in compact:
            if record.conversation_id == record.request_id:
                record.conversation_id = UNSET  # what the reader infers
    data: bytes = _encode_lines(compact)
    return data


def decode_audit_line(line: bytes) -> AuditRecord:
    """One record in either form.

    Raises:
        msgspec.MsgspecError, UnicodeDecodeError, RecursionError, ValueError: not a record.
    """
    if line.lstrip().startswith(_MARK):
        compact = _decode_compact(line)
        if compact.conversation_id is UNSET:  # left out: the request's own id
            compact.conversation_id = compact.request_id
        record: AuditRecord = _from_compact(compact)
        return record
    full: AuditRecord = _decode(line)
    return full
