"""The delivery protocol's vocabulary: control headers, timings and the cancel notice.

A call is a request published with a reply subject of the calling runtime. Besides the
reply itself, these control messages travel:

    callee -> caller   A2A-Ack: <instanceId>     on the reply subject of a call held for
                                                 more than ACK_AFTER seconds, or asked
                                                 about by an ``A2A-Probe: calls`` (empty body)
    caller -> callee   A2A-Probe: 1              on the subject of the instance holding a call
    callee -> caller   A2A-Alive: <instanceId>   the answer to a probe (empty body); with
                                                 ``A2A-Resend: 1`` when calls of the prober
                                                 arrived on a connection the instance lost
                                                 since: under generated permissions it can
                                                 answer them only once they are sent again
    caller -> agent    A2A-Probe: calls          on ``a2a.<ns>.cancel.<agent>.<sender>``, every
                                                 instance of the agent: a CancelNotice body
                                                 naming unacknowledged calls; an instance
                                                 that received one of them (handling it, or
                                                 not started yet) acknowledges it (above)
    callee -> caller   A2A-Probe: caller         on the reply subject of a call held for a
                                                 runtime that stopped probing (empty body;
                                                 nobody answers it)
    caller -> callee   CancelNotice              when calls are withdrawn: with the header
                                                 ``A2A-Cancel: 1`` on the subject of the
                                                 instance holding them when the caller knows
                                                 it, else on ``a2a.<ns>.cancel.<agent>.<sender>``
                                                 (calls lost together go in one notice)

    callee -> caller   A2A-Progress: 1           on the reply subject of a call, before its
                                                 reply: a JSON value telling how the work goes
                                                 (at most PROGRESS_BYTES; only to runtimes)

A callee accepts a cancel only from the sender of the call it withdraws (the sender token
of both subjects), and answers ``A2A-Probe: calls`` only for calls of that sender.

Liveness of the callee. Every PROBE_EVERY seconds the caller looks at its calls out for
longer than PROBE_AFTER. It probes the instance holding each (the one that acknowledged
it, or the one it was sent to): a dead instance has no subscription left, so the server
answers "no responders"; a second probe at least LOST_CONFIRM later that gets "no
responders" too ends the call with AGENT_LOST (an instance that only lost its connection
for a moment is subscribed again by then). A call sent to an agent's queue group that
nobody acknowledged (its callee may have died before ACK_AFTER) is asked about with
``A2A-Probe: calls``: "no responders" means no instance of the agent is left (AGENT_LOST at
once); an instance that received it acknowledges it, and from then on that instance is
probed. A call no instance claims is not lost while its callee may only be busy (an event
loop blocked by a handler reads nothing): only after UNCLAIMED_FOR seconds of unclaimed
rounds in a row, or half the call's timeout if that is longer, does it end with AGENT_LOST
(and is withdrawn in case its holder was only slow), unless an instance of the agent that
held calls of this caller lately is found dead since the call was sent: then it ends at the
first round that finds it unclaimed (see ``bus/watch.py``). So when one instance of a pool dies holding
calls it had not acknowledged yet, those calls end within about two seconds when the caller
knew the instance, else about UNCLAIMED_FOR seconds later, never at their deadline.

A caller counts no round while its own connection is down or SETTLING after a reconnect:
a probe it could not publish, or whose answer may have been lost with the connection, has
no verdict, and every unclaimed count starts again after a reconnect.

Liveness of the caller. Those probes also tell a callee that the calling runtime lives (the
runtime is the prefix of the probe's reply subject, the sender's own), and so does a call
it sends again. A callee holding calls of a runtime it has not heard from for CALLER_QUIET
seconds publishes ``A2A-Probe: caller`` on the reply subject of one of them, with a reply
subject of its own: the server answers "no responders" when the calling runtime's reply
subscription is gone. The callee checks again CALLER_RECHECK seconds later, and only when
that check gets "no responders" too, and it heard nothing from the runtime meanwhile, does
it stop every call it holds for that runtime (CANCELLED, reason CALLER_GONE); a handler that
called on is stopped with its own calls, which withdraws them in turn. A live caller probes
every PROBE_EVERY, so a dead one's calls stop 4 to 4.5 s after it died, and one that loses
its connection for less than about 3.5 s (CALLER_QUIET + CALLER_RECHECK - PROBE_EVERY)
keeps its calls. A call stopped so sends no reply and is not kept in the reply
cache: sent again (its caller only lost its connection for longer), it is handled again.
Delivered, or no verdict, the runtime counts as alive for another CALLER_QUIET; no check
runs while the callee's own connection is down. Callers in the callee's own process and
plain NATS requesters are never checked.

What a callee publishes on a reply subject is counted. Under the generated permissions
(``a2a nats-config``) the server lets the receiver of a request publish MAX_RESPONSES
messages on its reply subject. The last place is the reply's; before it, the callee keeps
room for its first ack and for CHECK_ROOM caller checks: progress updates stop when only
that room is left (counted in the endpoint's ``progress_dropped``: 60 updates at most), a
repeated ack never takes it, and the ack and checks never take the reply's. A runtime none
of whose calls here can carry a check is kept, not stopped (logged at debug level).

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
    "CALLER_RECHECK",
    "CANCEL_HEADER",
    "CHECK_ROOM",
    "DEADLINE",
    "EARLY_CANCELS",
    "LOST_CONFIRM",
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
    "QUEUED_ACKS",
    "REPLIES_HEADER",
    "REPLY_CACHE_BYTES",
    "REPLY_CACHE_SIZE",
    "RESEND_HEADER",
    "SETTLING",
    "SHUTDOWN",
    "SWEEP_EVERY",
    "UNCLAIMED_FOR",
    "UNCLAIMED_ROUNDS",
    "WITHDRAWN",
    "CancelNotice",
    "decode_cancel",
    "decode_progress",
    "encode_cancel",
    "encode_cancels",
    "encode_probe",
]

ACK_HEADER = "A2A-Ack"
PROBE_HEADER = "A2A-Probe"
ALIVE_HEADER = "A2A-Alive"
REPLIES_HEADER = "A2A-Replies"
CANCEL_HEADER = "A2A-Cancel"
PROGRESS_HEADER = "A2A-Progress"
RESEND_HEADER = "A2A-Resend"
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
PROBE_AFTER = 0.8
"""Calls out for longer than this are probed, acknowledged or not."""
LOST_CONFIRM = 0.6
"""An instance that got "no responders" is probed again this much later; a second "no
responders" ends its calls (a reconnecting instance is subscribed again by then)."""
UNCLAIMED_ROUNDS = 2
"""Probe rounds in a row in which no instance claims an unacknowledged call, at the least,
before it is lost (and UNCLAIMED_FOR seconds)."""
UNCLAIMED_FOR = 10.0
"""Seconds of unclaimed rounds in a row (or half the call's timeout, if longer) after which
an unacknowledged call is lost: a callee whose event loop is blocked claims nothing."""
PROBE_IDS = 256
"""Correlation ids one ``A2A-Probe: calls`` or cancel notice names at most (more go in several)."""
CALLER_QUIET = 2.0
"""A callee checks a calling runtime it has not heard a probe from for this long."""
CALLER_RECHECK = 2.0
"""A calling runtime whose check got "no responders" is checked again this much later; a
second "no responders" stops its calls (a short loss of its connection is tolerated)."""
MAX_RESPONSES = 64
"""Messages a callee may publish on one call's reply subject under generated permissions
(``a2a nats-config``): its ack, its reply, caller checks and progress updates."""
CHECK_ROOM = 2
"""Places on a reply subject (under generated permissions) kept for caller checks: progress
updates and repeated acks leave them free."""
SWEEP_EVERY = 0.05
"""How often a callee checks its held calls for acks and deadlines. The caller keeps the
exact deadline; the callee stops work within this much of it."""
SETTLING = 2.0
"""After a reconnect, "no responders" within this many seconds is retried, not final, and
probes that go unanswered count for nothing."""
EARLY_CANCELS = 1024
"""Withdrawals of calls not held yet that an endpoint remembers (the oldest are forgotten)."""
QUEUED_ACKS = 4
"""Acks a call waiting to be handled gets at most under generated permissions (each takes a
place on its reply subject)."""
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
    """The calls' request ids (the name is 1.2's, when a hop's correlation id was its own)."""
    reason: Annotated[str, Meta(max_length=256)] = "cancelled"


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(CancelNotice)


def encode_cancel(correlation_id: str) -> bytes:
    return _encoder.encode(CancelNotice(correlation_ids=[correlation_id]))


def encode_cancels(correlation_ids: list[str]) -> bytes:
    """One notice withdrawing several calls (at most PROBE_IDS)."""
    return _encoder.encode(CancelNotice(correlation_ids=correlation_ids))


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
