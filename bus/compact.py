"""The compact form of protocol 1.4: the same envelopes with short keys, and replies
that leave out what the request they answer already says.

A request or notification in the compact form is the full envelope with every key
shortened (:data:`ENVELOPE_KEYS`, :data:`PAYLOAD_KEYS`, :data:`METADATA_KEYS`) and three
more defaults: ``v`` (protocolVersion) is ``1.4``, ``m.br`` (batchReplies) is true, and
``m.dl`` (deadline) is ``ts + ttl`` (written when it is anything else: ``null`` for none
although there is a ttl). Readers of 1.5 take a fourth: ``c`` (conversationId) is
``m.ci``, the call tree's id, which a call from outside any agent that names no conversation
of its own gets as its conversation's id (:func:`encode_compact`'s ``elide``: in ``auto``
only for a receiver that announced 1.5, always under ``peer_protocol`` 1.5; a 1.4 reader
refuses the message, naming ``conversationId``). The tag is ``t``: ``q`` (request) or ``n`` (notification)::

    {"t":"q","i":"…","s":"client","d":"echo","p":{"a":"run","in":{"text":"…"}},
     "m":{"ts":1732252800000,"ci":"…","h":1,"ttl":10000}}

A reply to a compact request is compact too (``t`` is ``r`` for a response, ``e`` for an
error): its message id, the request's message id (``re``), its timestamp and its outcome
(``out`` result, ``err`` error, ``tok`` token usage); ``s`` only when the replying agent
is not the request's target. Everything else is the request's (conversation, correlation
and request ids, user, action, hop count and limits), and the caller, which holds the
request, puts it back (:func:`decode_reply`); a reply that differs from its request in any
of those travels in the full form instead, so nothing is lost either way::

    {"t":"r","i":"…","re":"…","ts":1732252800001,"out":{"text":"…"}}

Envelopes decode into the usual types (``bus.wire``): the rest of the runtime never sees
which form a message came in, except in its ``protocolVersion``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType

from .wire import (
    COMPACT_VERSION,
    ELIDING_VERSION,
    Envelope,
    ErrorEnvelope,
    ErrorInfo,
    Metadata,
    NonEmpty,
    NotificationEnvelope,
    Payload,
    RequestEnvelope,
    ResponseEnvelope,
    TokenUsage,
)

__all__ = [
    "ENVELOPE_KEYS",
    "METADATA_KEYS",
    "PAYLOAD_KEYS",
    "REPLY_KEYS",
    "CompactEnvelope",
    "CompactReply",
    "compact_response",
    "copier",
    "decode_compact",
    "decode_reply",
    "encode_compact",
    "encode_reply",
    "full_path",
    "is_compact",
]

ENVELOPE_KEYS = {
    "message_id": "i",
    "source_agent_id": "s",
    "target_agent_id": "d",
    "conversation_id": "c",
    "payload": "p",
    "metadata": "m",
    "protocol_version": "v",
    "in_reply_to": "re",
    "required_capabilities": "rc",
    "user_id": "u",
    "user_grant": "ug",
    "grants": "g",
    "delegation": "dg",
    "orchestration": "o",
}
PAYLOAD_KEYS = {"action": "a", "parameters": "in", "result": "out", "error": "err", "usage": "tok"}
METADATA_KEYS = {
    "timestamp": "ts",
    "correlation_id": "ci",
    "hop_count": "h",
    "max_hops": "mh",
    "priority": "pr",
    "ttl_ms": "ttl",
    "deadline": "dl",
    "depth": "dp",
    "max_depth": "md",
    "call_chain": "cc",
    "budget": "b",
    "request_id": "ri",
    "parent_id": "pi",
    "fan_out": "fo",
    "max_fan_out": "mf",
    "batch_replies": "br",
}
REPLY_KEYS = {
    "message_id": "i",
    "source_agent_id": "s",
    "in_reply_to": "re",
    "timestamp": "ts",
    "protocol_version": "v",
    "result": "out",
    "error": "err",
    "usage": "tok",
}
"""A compact reply's keys (one flat object)."""

_DEFAULTS: dict[str, Any] = {"protocol_version": COMPACT_VERSION, "batch_replies": True}
"""Fields whose default differs in the compact form (what every runtime sends)."""
_INFERRED = {
    "deadline": "Left out when it is ts + ttl.",
    "conversation_id": "Left out (1.5) when it is m.ci, the call tree's id.",
}
"""Fields the reader infers when they are left out (UNSET), and what it takes (the schema says)."""


def _mirror(
    name: str, full: type[msgspec.Struct], keys: dict[str, str], nested: dict[str, Any], **config: Any
) -> Any:
    """A Struct with ``full``'s fields, types and constraints (``nested`` replaces the types
    of nested objects by their compact twins), and the compact keys.

    Every field of ``full`` must have a key: a field added to the envelope without one
    fails here, at import, rather than going missing on the wire.
    """
    fields = msgspec.structs.fields(full)
    missing = {f.name for f in fields} ^ set(keys)
    if missing:
        raise TypeError(f"compact keys of {full.__name__} do not match its fields: {sorted(missing)}")
    spec: list[tuple[str, Any, Any]] = []
    for f in fields:
        tp, default = nested.get(f.name, f.type), f.default
        if f.name in _INFERRED:
            tp, default = Annotated[tp, Meta(description=_INFERRED[f.name])] | UnsetType, UNSET
        elif f.name in _DEFAULTS:
            default = _DEFAULTS[f.name]
        elif f.default_factory is not msgspec.NODEFAULT:
            default = f.default_factory()
        spec.append((f.name, tp, default) if default is not msgspec.NODEFAULT else (f.name, tp))  # type: ignore[arg-type]
    return msgspec.defstruct(name, spec, rename=keys, omit_defaults=True, **config)


_CPayload = _mirror("CompactPayload", Payload, PAYLOAD_KEYS, {})
_CMetadata = _mirror("CompactMetadata", Metadata, METADATA_KEYS, {})
_NESTED = {"payload": _CPayload, "metadata": _CMetadata}
_CRequest = _mirror("CompactRequest", RequestEnvelope, ENVELOPE_KEYS, _NESTED, tag_field="t", tag="q")
_CNotification = _mirror(
    "CompactNotification", NotificationEnvelope, ENVELOPE_KEYS, _NESTED, tag_field="t", tag="n"
)


def copier(full: type[msgspec.Struct], target: Any) -> Callable[[Any], Any]:
    """A function that builds ``target``, whose fields are ``full``'s in the same order, from
    the fields of the Struct it is given: one call of plain attribute reads (generated once
    from the field names), which costs a sixth of a dict of ``getattr`` calls or
    ``msgspec.structs.asdict``. The arguments are positional (a third of the cost of
    keywords) unless ``target`` takes keywords only."""
    if target.__struct_fields__ != full.__struct_fields__:
        raise TypeError(f"{target.__name__} does not have the fields of {full.__name__} in order")
    keywords = any(p.kind is p.KEYWORD_ONLY for p in inspect.signature(target).parameters.values())
    args = ", ".join(f"{name}=s.{name}" if keywords else f"s.{name}" for name in full.__struct_fields__)
    scope: dict[str, Any] = {"target": target}
    exec(f"def copy(s):\n    return target({args})", scope)  # the names are our own fields
    copy: Callable[[Any], Any] = scope["copy"]
    return copy


_TO_COMPACT = {
    RequestEnvelope: copier(RequestEnvelope, _CRequest),
    NotificationEnvelope: copier(NotificationEnvelope, _CNotification),
}
_FROM_COMPACT = {
    _CRequest: copier(RequestEnvelope, RequestEnvelope),
    _CNotification: copier(NotificationEnvelope, NotificationEnvelope),
}
_payload_to_compact = copier(Payload, _CPayload)
_payload_from_compact = copier(Payload, Payload)
_metadata_to_compact = copier(Metadata, _CMetadata)
_metadata_from_compact = copier(Metadata, Metadata)


class _CompactReply(msgspec.Struct, rename=REPLY_KEYS, omit_defaults=True, kw_only=True, tag_field="t"):
    message_id: NonEmpty
    in_reply_to: NonEmpty
    timestamp: int
    source_agent_id: NonEmpty | None = None
    """None: the request's target."""
    protocol_version: NonEmpty = COMPACT_VERSION
    result: Any = None
    error: ErrorInfo | None = None
    usage: TokenUsage | None = None


class CompactResponse(_CompactReply, tag="r"):
    """A response to a compact request."""


class CompactError(_CompactReply, tag="e"):
    """An error answering a compact request."""


CompactEnvelope: Any = _CRequest | _CNotification
"""A request or notification in the compact form (for its JSON Schema)."""
CompactReply: Any = CompactResponse | CompactError
"""A reply to a compact request (for its JSON Schema)."""

_encode = msgspec.json.Encoder().encode
_decode_envelope = msgspec.json.Decoder(CompactEnvelope).decode
_decode_reply = msgspec.json.Decoder(CompactReply).decode
_MARK = b'{"t":'


def is_compact(data: bytes) -> bool:
    """True for bytes in the compact form (as this runtime writes it: the tag first)."""
    return data.startswith(_MARK)


def encode_compact(envelope: RequestEnvelope | NotificationEnvelope, *, elide: bool = False) -> bytes:
    """A request or notification in the compact form (its protocolVersion is 1.4 whatever it
    says); with ``elide`` (the receiver reads 1.5), without a conversation id that is the
    correlation id."""
    m = envelope.metadata
    meta = _metadata_to_compact(m)
    if m.deadline == (None if m.ttl_ms is None else m.timestamp + m.ttl_ms):
        meta.deadline = UNSET  # what the reader infers
    compact = _TO_COMPACT[type(envelope)](envelope)
    if elide and envelope.conversation_id == m.correlation_id:
        compact.conversation_id = UNSET  # what the reader infers
    compact.payload = _payload_to_compact(envelope.payload)
    compact.metadata = meta
    compact.protocol_version = COMPACT_VERSION
    data: bytes = _encode(compact)
    return data


def decode_compact(data: bytes) -> Envelope:
    """A compact request or notification as the usual envelope type.

    Raises:
        msgspec.ValidationError, msgspec.DecodeError: as the full form's decoder does
            (``bus.codec`` turns them into INVALID_ENVELOPE).
    """
    compact = _decode_envelope(data)
    meta = _metadata_from_compact(compact.metadata)
    if compact.conversation_id is UNSET:  # left out (1.5): the call tree's
        compact.conversation_id = meta.correlation_id
    if meta.deadline is UNSET:
        meta.deadline = None if meta.ttl_ms is None else meta.timestamp + meta.ttl_ms
    envelope: RequestEnvelope | NotificationEnvelope = _FROM_COMPACT[type(compact)](compact)
    envelope.payload = _payload_from_compact(compact.payload)
    envelope.metadata = meta
    if envelope.protocol_version == ELIDING_VERSION:  # the compact form, as 1.4 names it
        envelope.protocol_version = COMPACT_VERSION
    return envelope


def encode_reply(reply: ResponseEnvelope | ErrorEnvelope, request: RequestEnvelope) -> bytes | None:
    """``reply`` to the compact ``request`` in the compact form, or None when it says
    something its request does not (it then travels in the full form)."""
    meta, asked = reply.metadata, request.metadata
    p = reply.payload
    target = request.target_agent_id
    if (
        reply.in_reply_to is None
        or reply.target_agent_id != request.source_agent_id
        or reply.conversation_id != request.conversation_id
        or reply.user_id != request.user_id
        or p.action != request.payload.action
        or p.parameters is not None
        or meta != asked.answered(meta.timestamp)
        or reply.required_capabilities is not None
        or reply.user_grant is not None
        or reply.grants is not None
        or reply.delegation is not None
        or reply.orchestration is not None
    ):
        return None
    source = None if reply.source_agent_id == target else reply.source_agent_id
    kind = CompactResponse if type(reply) is ResponseEnvelope else CompactError
    return _encode(
        kind(
            message_id=reply.message_id,
            in_reply_to=reply.in_reply_to,
            timestamp=meta.timestamp,
            source_agent_id=source,
            result=p.result,
            error=p.error,
            usage=p.usage,
        )
    )


def compact_response(
    request: RequestEnvelope,
    message_id: str,
    agent: str,
    result: Any,
    usage: TokenUsage | None,
    timestamp: int,
) -> bytes:
    """``agent``'s response to the compact ``request``, carrying ``result``: the bytes
    :func:`encode_reply` gives for the response that follows the request in everything else
    (``bus.answers.response_to``), without building that response first."""
    source = None if agent == request.target_agent_id else agent
    reply = CompactResponse(
        message_id=message_id,
        in_reply_to=request.message_id,
        timestamp=timestamp,
        source_agent_id=source,
        result=result,
        usage=usage,
    )
    return _encode(reply)


def decode_reply(data: bytes, request: RequestEnvelope) -> ResponseEnvelope | ErrorEnvelope:
    """A compact reply to ``request``, completed with what the request says.

    Raises:
        msgspec.ValidationError, msgspec.DecodeError: bytes that are not a compact reply.
    """
    c = _decode_reply(data)
    target = request.target_agent_id
    source = c.source_agent_id
    if source is None:
        # A request to several agents names them all: a reply must say which one it is.
        if not isinstance(target, str):
            raise msgspec.ValidationError("Object missing required field `s`")
        source = target
    kind = ResponseEnvelope if type(c) is CompactResponse else ErrorEnvelope
    return kind(
        message_id=c.message_id,
        source_agent_id=source,
        target_agent_id=request.source_agent_id,
        conversation_id=request.conversation_id,
        in_reply_to=c.in_reply_to,
        user_id=request.user_id,
        protocol_version=c.protocol_version,
        payload=Payload(action=request.payload.action, result=c.result, error=c.error, usage=c.usage),
        metadata=request.metadata.answered(c.timestamp),
    )


_PATHS = {
    **{v: k for k, v in ENVELOPE_KEYS.items()},
    **{f"p.{v}": f"payload.{k}" for k, v in PAYLOAD_KEYS.items()},
    **{f"m.{v}": f"metadata.{k}" for k, v in METADATA_KEYS.items()},
    **{v: k for k, v in REPLY_KEYS.items()},
    "t": "type",
}


def full_path(path: str) -> str:
    """The full form's dotted path (``metadata.correlationId``) of a compact one (``m.ci``)."""
    head, rest = path, ""
    for cut in (2, 1):  # "m.ci.x" -> "m.ci" + ".x"; "i" -> "i"
        parts = path.split(".")
        if len(parts) >= cut and ".".join(parts[:cut]) in _PATHS:
            head, rest = ".".join(parts[:cut]), "".join(f".{x}" for x in parts[cut:])
            break
    name = _PATHS.get(head)
    if name is None:
        return path
    return ".".join(_camel(x) for x in name.split(".")) + rest


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(x.title() for x in rest)
