"""The delivery protocol's vocabulary: control headers, timings and the cancel notice.

A call is a request published with a reply subject of the calling runtime. Besides the
reply itself, four control messages travel:

    callee -> caller   A2A-Ack: <instanceId>     on the reply subject of a call held for
                                                 more than ACK_AFTER seconds (empty body)
    caller -> callee   A2A-Probe: 1              on the subject of the instance holding a call
    callee -> caller   A2A-Alive: <instanceId>   the answer to a probe (empty body)
    caller -> callee   CancelNotice              when a call is withdrawn: with the header
                                                 ``A2A-Cancel: 1`` on the subject of the
                                                 instance holding it when the caller knows
                                                 it, else on ``a2a.<ns>.cancel.<agent>.<sender>``

    callee -> caller   A2A-Progress: 1           on the reply subject of a call, before its
                                                 reply: a JSON value telling how the work goes
                                                 (at most PROGRESS_BYTES; only to runtimes)

A dead instance has no subscription left, so a probe to it is answered by the server's
"no responders" status, and the caller ends the call with AGENT_LOST. A callee accepts a
cancel only from the sender of the call it withdraws (the sender token of both subjects).

Replies may travel together. A caller that sets ``metadata.batchReplies`` on its requests
accepts a reply batch: one message, on the reply subject of one of the calls it answers,
with the header ``A2A-Replies: <count>`` and one line per reply, ``<reply token> <envelope
JSON>``, where the reply token is the last token of that call's reply subject. A callee
sends the first reply to a calling runtime in a turn of its event loop alone, and the
others ready in that turn as one batch (see :meth:`bus.link.Link.reply`): under load, the
callee, the server and the caller each handle two messages per turn instead of one per
reply. Callers that do not set the field (and plain NATS requesters) always get one reply
per message.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

__all__ = [
    "ACK_AFTER",
    "ACK_HEADER",
    "ALIVE_HEADER",
    "CANCEL_HEADER",
    "DEADLINE",
    "MALFORMED",
    "PROBE_HEADER",
    "PROGRESS_BYTES",
    "PROGRESS_HEADER",
    "REPLIES_HEADER",
    "REPLY_CACHE_BYTES",
    "REPLY_CACHE_SIZE",
    "SETTLING",
    "SHUTDOWN",
    "SWEEP_EVERY",
    "WITHDRAWN",
    "CancelNotice",
    "decode_cancel",
    "decode_progress",
    "encode_cancel",
]

ACK_HEADER = "A2A-Ack"
PROBE_HEADER = "A2A-Probe"
ALIVE_HEADER = "A2A-Alive"
REPLIES_HEADER = "A2A-Replies"
CANCEL_HEADER = "A2A-Cancel"
PROGRESS_HEADER = "A2A-Progress"
PROGRESS_BYTES = 16 * 1024
"""The largest progress update; larger ones are dropped by the callee (and by the caller)."""

ACK_AFTER = 0.2
"""Calls still in hand after this long are acknowledged to their callers, who then probe."""
SWEEP_EVERY = 0.05
"""How often a callee checks its held calls for acks and deadlines. The caller keeps the
exact deadline; the callee stops work within this much of it."""
SETTLING = 2.0
"""After a reconnect, "no responders" within this many seconds is retried, not final."""
REPLY_CACHE_SIZE = 4096
"""Replies a callee keeps to answer a call sent again after a lost connection."""
REPLY_CACHE_BYTES = 64 * 1024
"""Larger replies are not kept; a repeat of such a call gets no answer from the cache."""

# Why a callee stopped a handler; carried in the CANCELLED error's details.
WITHDRAWN = "withdrawn"
SHUTDOWN = "shutdown"
DEADLINE = "deadline"


class CancelNotice(msgspec.Struct, rename="camel"):
    """Sent to the callee when a caller withdraws calls."""

    correlation_ids: Annotated[list[Annotated[str, Meta(max_length=256)]], Meta(max_length=1024)]
    reason: Annotated[str, Meta(max_length=256)] = "cancelled"


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(CancelNotice)


def encode_cancel(correlation_id: str) -> bytes:
    return _encoder.encode(CancelNotice(correlation_ids=[correlation_id]))


MALFORMED = object()
"""What :func:`decode_progress` returns for bytes that are not a progress update."""

_decode_json = msgspec.json.Decoder().decode


def decode_progress(data: bytes) -> Any:
    """A progress update's JSON value, or MALFORMED (not JSON, or over PROGRESS_BYTES)."""
    if len(data) > PROGRESS_BYTES:
        return MALFORMED
    try:
        return _decode_json(data)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError, ValueError):
        return MALFORMED


def decode_cancel(data: bytes) -> CancelNotice | None:
    """The notice, or None when the bytes are not one."""
    try:
        return _decoder.decode(data)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError, ValueError):
        return None
