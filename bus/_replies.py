"""What a caller makes of a reply: the response, or the typed error it raises."""

from __future__ import annotations

from dataclasses import dataclass

from . import codec
from .errors import InvalidEnvelope, error_from_info
from .wire import Envelope, ErrorEnvelope, RequestEnvelope, ResponseEnvelope

__all__ = ["CallerStats", "parse_reply", "target_of"]


@dataclass
class CallerStats:
    requests: int = 0
    replies: int = 0
    errors: int = 0
    timeouts: int = 0
    no_responders: int = 0
    invalid_replies: int = 0
    lost: int = 0
    resent: int = 0
    progress_dropped: int = 0  # for calls that ended or did not ask for them, or malformed updates


def parse_reply(data: bytes, request: RequestEnvelope, stats: CallerStats) -> Envelope:
    """The reply ``data`` holds, answering ``request``, which came on the request's own reply
    subject (a line of a reply batch: :func:`batch_answer`); :func:`outcome_of` tells its
    outcome.

    Raises:
        InvalidEnvelope: a reply that does not decode or does not answer this request
            (counted in ``stats``).
    """
    try:
        reply = codec.decode_answer(data, request)
    except InvalidEnvelope as exc:
        stats.invalid_replies += 1
        raise exc.located(target_of(request), request.metadata.hop_count) from None
    if not answers(reply, request, batched=False):
        stats.invalid_replies += 1
        raise InvalidEnvelope(
            f"the reply answers message {str(reply.in_reply_to)[:64]!r}, not this request",
            agent=target_of(request),
            details={"field": "inReplyTo"},
        )
    return reply


def batch_answer(data: bytes, request: RequestEnvelope) -> Envelope | None:
    """The reply a reply batch's line holds for ``request``; None when it does not decode or
    does not answer that very request (dropped then, and the call goes on waiting: a line
    names its call by request id, which downstream hops know, so anyone who may answer one
    call of a runtime could otherwise end its others)."""
    try:
        reply = codec.decode_answer(data, request)
    except InvalidEnvelope:
        return None
    return reply if answers(reply, request, batched=True) else None


def answers(reply: Envelope, request: RequestEnvelope, *, batched: bool) -> bool:
    """Whether ``reply`` answers ``request``, whose message id only its callee saw. An error
    on the request's own reply subject may name no request (a refusal sent before the
    request was read, such as OVERLOADED); one in a batch line must."""
    named = reply.in_reply_to
    return named == request.message_id or (named is None and not batched and type(reply) is ErrorEnvelope)


def outcome_of(reply: Envelope, request: RequestEnvelope, stats: CallerStats) -> ResponseEnvelope:
    """The response, or the callee's typed error raised (counted in ``stats``).

    Raises:
        A2AError: the callee's error, or INVALID_ENVELOPE for a reply that is neither.
    """
    if type(reply) is ResponseEnvelope:
        stats.replies += 1
        return reply
    if type(reply) is ErrorEnvelope and reply.payload.error is not None:
        stats.errors += 1
        error = error_from_info(reply.payload.error)
        error.usage = reply.payload.usage
        raise error
    stats.invalid_replies += 1
    raise InvalidEnvelope(
        f"expected a response or error envelope, got {reply.__class__.__name__}",
        agent=target_of(request),
        details={"field": "type"},
    )


def target_of(envelope: RequestEnvelope) -> str:
    """The agent a request names (several, comma-separated)."""
    target = envelope.target_agent_id
    return target if isinstance(target, str) else ",".join(target)
