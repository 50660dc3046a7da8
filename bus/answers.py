"""The envelopes a callee answers with: a request's response, or a typed error."""

from __future__ import annotations

import time
from typing import Any

from .errors import A2AError
from .ids import serial_id
from .wire import (
    PROTOCOL_VERSION,
    Envelope,
    ErrorEnvelope,
    Metadata,
    Payload,
    RequestEnvelope,
    ResponseEnvelope,
    TokenUsage,
)

__all__ = ["error_to", "response_to"]


def response_to(
    request: RequestEnvelope, agent: str, result: Any, usage: TokenUsage | None
) -> ResponseEnvelope:
    """``agent``'s response carrying ``result`` (its metadata follows the request's)."""
    meta = request.metadata
    response = ResponseEnvelope(
        message_id=serial_id(),
        source_agent_id=agent,
        target_agent_id=request.source_agent_id,
        conversation_id=request.conversation_id,
        in_reply_to=request.message_id,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action=request.payload.action, result=result),
        metadata=Metadata(
            timestamp=int(time.time() * 1000),
            correlation_id=meta.correlation_id,
            request_id=meta.request_id,
            hop_count=meta.hop_count,
            max_hops=meta.max_hops,
            depth=meta.depth,
            max_depth=meta.max_depth,
            priority=meta.priority,
        ),
    )
    if request.user_id is not None:
        response.user_id = request.user_id
    if usage is not None:
        response.payload.usage = usage
    return response


def error_to(
    request: Envelope | None, agent: str, reply: str, error: A2AError, usage: TokenUsage | None
) -> ErrorEnvelope:
    """``agent``'s error envelope for ``request`` (None: a message that could not be read,
    answered on ``reply``, whose last token names the call)."""
    named = reply.rsplit(".", 1)[-1]
    correlation_id = request.metadata.correlation_id if request else named
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
        metadata=Metadata(
            timestamp=int(time.time() * 1000),
            correlation_id=correlation_id or "unknown",
            request_id=request.metadata.request_id if request else named or None,
            hop_count=request.metadata.hop_count if request else 0,
        ),
    )
