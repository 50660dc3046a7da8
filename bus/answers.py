"""The envelopes a callee answers with: a request's response, or a typed error."""

from __future__ import annotations

import time
from typing import Any

from .codec import encode_envelope, encode_reply
from .compact import compact_response
from .errors import A2AError, PayloadTooLarge
from .ids import serial_id
from .wire import (
    COMPACT_VERSION,
    PROTOCOL_VERSION,
    Envelope,
    ErrorEnvelope,
    Metadata,
    Payload,
    RequestEnvelope,
    ResponseEnvelope,
    TokenUsage,
)

__all__ = ["encode_answer", "encode_response", "error_to", "response_to"]


def response_to(
    request: RequestEnvelope, agent: str, result: Any, usage: TokenUsage | None
) -> ResponseEnvelope:
    """``agent``'s response carrying ``result`` (its metadata follows the request's)."""
    response = ResponseEnvelope(
        message_id=serial_id(),
        source_agent_id=agent,
        target_agent_id=request.source_agent_id,
        conversation_id=request.conversation_id,
        in_reply_to=request.message_id,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action=request.payload.action, result=result),
        metadata=request.metadata.answered(int(time.time() * 1000)),
    )
    if request.user_id is not None:
        response.user_id = request.user_id
    if usage is not None:
        response.payload.usage = usage
    return response


def encode_response(request: RequestEnvelope, agent: str, result: Any, usage: TokenUsage | None) -> bytes:
    """``encode_answer(response_to(request, agent, result, usage), request)``: a compact
    request's response straight in the compact form (the callee's hot path).

    Raises:
        TypeError, msgspec.EncodeError...: a result JSON cannot hold (``codec.ENCODE_ERRORS``).
    """
    if request.protocol_version == COMPACT_VERSION:
        return compact_response(request, serial_id(), agent, result, usage, int(time.time() * 1000))
    return encode_envelope(response_to(request, agent, result, usage))


def error_to(
    request: Envelope | None, agent: str, reply: str, error: A2AError, usage: TokenUsage | None
) -> ErrorEnvelope:
    """``agent``'s error envelope for ``request`` (None: a message that could not be read,
    answered on ``reply``, whose last token names the call)."""
    named = reply.rsplit(".", 1)[-1]
    return ErrorEnvelope(
        message_id=serial_id(),
        source_agent_id=agent,
        target_agent_id=request.source_agent_id if request else "unknown",
        conversation_id=request.conversation_id if request else "unknown",
        in_reply_to=request.message_id if request else None,
        user_id=request.user_id if request else None,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(
            action=request.payload.action if request else "",
            error=error.to_info(),
            usage=usage,
        ),
        metadata=request.metadata.answered(int(time.time() * 1000)) if request else _unread(named),
    )


def _unread(named: str) -> Metadata:
    """The metadata of an error to a message that could not be read: the call its reply subject names."""
    return Metadata(
        timestamp=int(time.time() * 1000), correlation_id=named or "unknown", request_id=named or None
    )


def encode_answer(
    reply: ResponseEnvelope | ErrorEnvelope, request: Envelope | None, limit: int | None = None
) -> bytes:
    """``reply`` in the form its request came in: compact to a compact (1.4) request when
    nothing in it differs from the request (``bus.compact``), else the full form.

    Raises:
        PayloadTooLarge: the encoded reply exceeds ``limit`` bytes.
        TypeError, msgspec.EncodeError...: a result JSON cannot hold (``codec.ENCODE_ERRORS``).
    """
    data = None
    if type(request) is RequestEnvelope and request.protocol_version == COMPACT_VERSION:
        data = encode_reply(reply, request)
    if data is None:
        data = encode_envelope(reply)
    if limit is not None and len(data) > limit:
        raise PayloadTooLarge(
            f"envelope of {len(data)} bytes exceeds the {limit}-byte message limit",
            details={"size": len(data), "limit": limit},
        )
    return data
