"""What a caller makes of a reply: the response, or the typed error it raises."""

from __future__ import annotations

from dataclasses import dataclass

from . import codec
from .errors import InvalidEnvelope, error_from_info
from .wire import ErrorEnvelope, RequestEnvelope, ResponseEnvelope

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


def parse_reply(
    data: bytes, request: RequestEnvelope, stats: CallerStats, *, batched: bool = False
) -> ResponseEnvelope:
    """The response ``data`` holds, answering ``request`` (counted in ``stats``); ``batched``:
    it came as a line of a reply batch, where an error too must name the request it answers
    (a refusal of a request its sender could not read never travels in a batch, and a batch
    line may name any call of this runtime).

    Raises:
        A2AError: the callee's typed error, or INVALID_ENVELOPE for a reply that does not
            decode or does not answer this request.
    """
    try:
        reply = codec.decode_answer(data, request)
    except InvalidEnvelope as exc:
        stats.invalid_replies += 1
        raise exc.located(target_of(request), request.metadata.hop_count) from None
    answers = reply.in_reply_to
    if answers != request.message_id and (answers is not None or batched or type(reply) is not ErrorEnvelope):
        # Not an answer to this request (whose message id only its callee saw): a reply
        # aimed at this call by someone who never received it. An error may name no
        # request (a refusal sent before the request was read, such as OVERLOADED).
        stats.invalid_replies += 1
        raise InvalidEnvelope(
            f"the reply answers message {str(answers)[:64]!r}, not this request",
            agent=target_of(request),
            details={"field": "inReplyTo"},
        )
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
