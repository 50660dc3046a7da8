"""The delivery protocol's vocabulary: control headers, timings and the cancel notice.

A call is a request published with a reply subject of the calling runtime. Besides the
reply itself, these control messages travel:

    callee -> caller   A2A-Ack: <instanceId>     on the reply subject of a call held for
                                                 more than ACK_AFTER seconds, or asked
                                                 about by an ``A2A-Probe: calls`` (empty body)
    caller -> callee   A2A-Probe: 1              on the subject of the instance holding a call
    callee -> caller   A2A-Alive: <instanceId>   the answer to a probe (empty body)
    caller -> agent    A2A-Probe: calls          on ``a2a.<ns>.cancel.<agent>.<sender>``, every
                                                 instance of the agent: a CancelNotice body
                                                 naming unacknowledged calls; an instance
                                                 holding one of them acknowledges it (above)
    callee -> caller   A2A-Probe: caller         on the reply subject of a call held for a
                                                 runtime that stopped probing (empty body;
                                                 nobody answers it)
    caller -> callee   CancelNotice              when a call is withdrawn: with the header
                                                 ``A2A-Cancel: 1`` on the subject of the
                                                 instance holding it when the caller knows
                                                 it, else on ``a2a.<ns>.cancel.<agent>.<sender>``

    callee -> caller   A2A-Progress: 1           on the reply subject of a call, before its
                                                 reply: a JSON value telling how the work goes
                                                 (at most PROGRESS_BYTES; only to runtimes)

A callee accepts a cancel only from the sender of the call it withdraws (the sender token
of both subjects), and answers ``A2A-Probe: calls`` only for calls of that sender.

Liveness of the callee. Every PROBE_EVERY seconds the caller looks at its calls out for
longer than PROBE_AFTER. It probes the instance holding each (the one that acknowledged
it, or the one it was sent to): a dead instance has no subscription left, so the server
answers "no responders" and the call ends with AGENT_LOST. A call sent to an agent's queue
group that nobody acknowledged (its callee may have died before ACK_AFTER) is asked about
with ``A2A-Probe: calls``: "no responders" means no instance of the agent is left
(AGENT_LOST); a live holder acknowledges it, and from then on its instance is probed; a
call that no instance claims in UNCLAIMED_ROUNDS rounds in a row ended with its holder
(AGENT_LOST, and withdrawn in case the holder was only slow).

Liveness of the caller. Those probes also tell a callee that the calling runtime lives (the
runtime is the prefix of the probe's reply subject, the sender's own). A callee holding calls
of a runtime it has not heard from for CALLER_QUIET seconds publishes ``A2A-Probe: caller``
on the reply subject of one of them, with a reply subject of its own: the server answers
"no responders" when the calling runtime's reply subscription is gone, and the callee then
stops every call it holds for that runtime (CANCELLED, reason CALLER_GONE); a handler that
called on is stopped with its own calls, which withdraws them in turn. Delivered, or no
verdict, the runtime counts as alive for another CALLER_QUIET. Callers in the callee's own
process and plain NATS requesters are never checked.

What a callee publishes on a reply subject is counted. Under the generated permissions
(``a2a nats-config``) the server lets the receiver of a request publish MAX_RESPONSES
messages on its reply subject: its ack, its reply, and between them caller checks and
progress updates. A call with no room left besides its reply never carries ``A2A-Probe:
caller``; when no held call of a quiet runtime can carry it, silence alone stops them. A
callee whose server proves senders (``strict``) also drops a progress update after which
the reply would no longer fit (counted).

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
    "CALLER_GONE",
    "CALLER_QUIET",
    "CANCEL_HEADER",
    "DEADLINE",
    "MALFORMED",
    "MAX_RESPONSES",
    "PROBE_AFTER",
    "PROBE_CALLER",
    "PROBE_CALLS",
    "PROBE_EVERY",
    "PROBE_HEADER",
    "PROBE_IDS",
    "PROBE_INSTANCE",
    "PROGRESS_BYTES",
    "PROGRESS_HEADER",
    "REPLIES_HEADER",
    "REPLY_CACHE_BYTES",
    "REPLY_CACHE_SIZE",
    "SETTLING",
    "SHUTDOWN",
    "SWEEP_EVERY",
    "UNCLAIMED_ROUNDS",
    "WITHDRAWN",
    "CancelNotice",
    "decode_cancel",
    "decode_progress",
    "encode_cancel",
    "encode_probe",
]

ACK_HEADER = "A2A-Ack"
PROBE_HEADER = "A2A-Probe"
ALIVE_HEADER = "A2A-Alive"
REPLIES_HEADER = "A2A-Replies"
CANCEL_HEADER = "A2A-Cancel"
PROGRESS_HEADER = "A2A-Progress"
PROBE_INSTANCE = "1"
"""``A2A-Probe`` on an instance subject: is this instance alive?"""
PROBE_CALLS = "calls"
"""``A2A-Probe`` on an agent's cancel subject: which instance holds these calls?"""
PROBE_CALLER = "caller"
"""``A2A-Probe`` on a call's reply subject: is the calling runtime still there?"""
PROGRESS_BYTES = 16 * 1024
"""The largest progress update; larger ones are dropped by the callee (and by the caller)."""

ACK_AFTER = 0.2
"""Calls still in hand after this long are acknowledged to their callers, who then probe."""
PROBE_EVERY = 0.5
"""How often a caller probes for its long calls (and how long it waits for a verdict)."""
PROBE_AFTER = 1.0
"""Calls out for longer than this are probed, acknowledged or not."""
UNCLAIMED_ROUNDS = 2
"""Probe rounds in a row in which no instance claims an unacknowledged call: then it is lost."""
PROBE_IDS = 256
"""Correlation ids one ``A2A-Probe: calls`` names at most (more go in several probes)."""
CALLER_QUIET = 2.0
"""A callee checks a calling runtime it has not heard a probe from for this long."""
MAX_RESPONSES = 64
"""Messages a callee may publish on one call's reply subject under generated permissions
(``a2a nats-config``): its ack, its reply, a caller check and progress updates."""
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
CALLER_GONE = "caller-gone"


class CancelNotice(msgspec.Struct, rename="camel"):
    """Sent to the callee when a caller withdraws calls."""

    correlation_ids: Annotated[list[Annotated[str, Meta(max_length=256)]], Meta(max_length=1024)]
    reason: Annotated[str, Meta(max_length=256)] = "cancelled"


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(CancelNotice)


def encode_cancel(correlation_id: str) -> bytes:
    return _encoder.encode(CancelNotice(correlation_ids=[correlation_id]))


def encode_probe(correlation_ids: list[str]) -> bytes:
    """The body of an ``A2A-Probe: calls``: the calls asked about, as a CancelNotice."""
    return _encoder.encode(CancelNotice(correlation_ids=correlation_ids, reason="probe"))


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
