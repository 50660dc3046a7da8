"""The callee half of the delivery protocol: one agent instance's subscriptions, held calls and replies.

An :class:`Endpoint` subscribes to the agent's subject (queue group = agent name), to its
own instance subject, to the agent's cancel subject and to the agent's notification
topics, each from any sender. Before a message reaches the host it answers liveness
probes (and tells :class:`bus.callers.Callers` which runtime probed), takes cancels,
acknowledges the calls an ``A2A-Probe: calls`` asks about (held, or received and waiting to
be handled), and recognises a call sent again after a lost connection (same reply subject):
a repeat is answered from the reply cache, never run twice. While a call is held it is
acknowledged to its caller after ``ACK_AFTER`` seconds, stopped at its deadline, and stopped
when the runtime that sent it withdraws it or is gone. Under generated permissions what it
publishes on a call's reply subject keeps room for the reply, the first ack and caller
checks (``bus/protocol.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio

from transports import Message

from ._received import Received
from .answers import encode_answer, encode_response, error_to
from .codec import ENCODE_ERRORS
from .errors import A2AError, AgentError, Cancelled, InvalidEnvelope, PayloadTooLarge
from .held import Held
from .link import Link
from .listening import Listening
from .protocol import (
    ACK_AFTER,
    ACK_HEADER,
    ALIVE_HEADER,
    CALLER_GONE,
    CANCEL_HEADER,
    CHECK_ROOM,
    DEADLINE,
    EARLY_CANCELS,
    PROBE_CALLS,
    PROBE_EVERY,
    PROBE_HEADER,
    PROGRESS_HEADER,
    QUEUED_ACKS,
    REPLY_CACHE_BYTES,
    RESEND_HEADER,
    WITHDRAWN,
    decode_cancel,
)
from .rejects import Rejects
from .subjects import inbox_prefix
from .wire import Envelope, ErrorInfo, RequestEnvelope, TokenUsage

__all__ = ["Deliver", "Endpoint", "Held"]

log = logging.getLogger("a2a.bus")

Deliver = Callable[[Message], None]
"""Where an endpoint hands each message that is neither a probe nor a repeat; it must not
block (the subscription's next message waits for it), so it hands the work off."""


class Endpoint:
    """One agent instance's end of the protocol; create with :meth:`bus.Bus.endpoint`."""

    def __init__(
        self,
        link: Link,
        *,
        agent: str,
        instance_id: str,
        topics: Iterable[str],
        deliver: Deliver,
        runtime_replies: str,
        strict: bool = False,
        heard: Callable[[str], None] | None = None,
    ) -> None:
        self.link = link
        self.agent = agent
        self.instance_id = instance_id
        self.topics = list(topics)
        self.deliver = deliver
        self.repeated = 0
        """Calls received again (after a reconnect) and answered from the reply cache."""
        self.cancel_rejects = Rejects(log, f"{instance_id}: cancel notice")
        """Cancel notices dropped: malformed, or not from the sender of the call they name."""
        self.held: dict[str, Held] = {}
        self._early: dict[str, str] = {}
        """Calls withdrawn before they were held (still queued here) -> their sender; oldest first."""
        self._runtime_replies = runtime_replies
        self._strict = strict
        self.progress_dropped = 0
        """Progress updates not sent: under generated permissions, the reply would not fit after them."""
        self.reply_rejects = Rejects(log, f"{instance_id}: message")
        """Messages not answered because their reply subject is not their sender's (``strict``)."""
        self._received = Received()
        self._listening = Listening(link, agent, instance_id, self.topics)
        self._heard = heard
        """Told the reply subject of each probe: the runtime that sent it is alive."""

    async def open(self) -> None:
        """Subscribe: the agent's queue group, this instance, the agent's cancels and topics."""
        await self._listening.open(self.on_message, self.on_cancel, self.take)

    async def stop_taking(self) -> None:
        """Take no new work; calls in hand are still probed, withdrawn and answered (see
        :meth:`bus.listening.Listening.stop_taking`)."""
        await self._listening.stop_taking()

    async def close(self) -> None:
        """Stop receiving (held calls go on until they finish or are cancelled)."""
        await self._listening.close()

    async def on_message(self, msg: Message) -> None:
        """Subscription callback: the host takes calls (:meth:`take`); probes and repeats are answered."""
        if self.take(msg):
            return
        reply = msg.reply
        if reply and self._strict and not self._answerable(msg.subject, reply):
            self.reply_rejects("reply subject not the sender's", f"{msg.subject} -> {reply}")
            return
        headers = msg.headers
        if headers and PROBE_HEADER in headers:
            if reply:
                if self._heard is not None:
                    self._heard(reply)
                alive = {ALIVE_HEADER: self.instance_id}
                stale = self._received.stale
                if stale and self.link.subjects.runtime_prefix(reply) in stale:
                    alive[RESEND_HEADER] = "1"  # its calls came on a connection since lost
                await self._publish(reply, b"", alive)
            return
        if headers and CANCEL_HEADER in headers:
            await self.on_cancel(msg)
            return
        self.repeated += 1  # what take left: a call sent again (either side lost its connection)
        if self._heard is not None:
            self._heard(reply)  # its runtime is there
        if self._received.stale:
            self._received.stale.discard(self.link.subjects.runtime_prefix(reply))
        done = self._received.reply(reply)
        if done:  # answered already: answer again; in progress or uncached: the first answers
            await self._publish(reply, done)

    def take(self, msg: Message) -> bool:
        """Hand a call or notification to the host (True); False for what :meth:`on_message`
        answers itself: a probe, a cancel notice, a call sent again, or one on a reply subject
        that is not its sender's."""
        reply = msg.reply
        if reply and self._strict and not self._answerable(msg.subject, reply):
            return False
        headers = msg.headers
        if headers and (PROBE_HEADER in headers or CANCEL_HEADER in headers):
            return False
        if reply.startswith(self._runtime_replies) and not self._received.arrived(reply):
            return False  # a repeat (noted as such: on_message answers it)
        self.deliver(msg)
        return True

    def _answerable(self, subject: str, reply: str) -> bool:
        """May this endpoint answer on ``reply``? Only on the sender's own reply subjects: its
        runtime reply subjects, its own request inboxes, or plain ``_INBOX.`` inboxes (NATS
        tools). The server lets whoever receives a message answer on its reply subject, so
        were an endpoint to answer on any, a sender could aim answers at another's call.
        """
        sender = self.link.subjects.sender_of(subject)
        return (
            reply.startswith(f"{self._runtime_replies}{sender}.")
            or reply.startswith(f"{inbox_prefix(sender)}.")
            or reply.startswith("_INBOX.")
        )

    # -- held calls ----------------------------------------------------------------------

    def hold(self, correlation_id: str, held: Held) -> None:
        """Track a call being handled: acknowledged while it lasts, stopped at its deadline or
        withdrawal. INVALID_ENVELOPE when another sender's call of that id is held (ids are
        known downstream: taking its place would shield that call from both)."""
        if (other := self.held.get(correlation_id)) is not None and other.sender != held.sender:
            raise InvalidEnvelope("the request id names another's call", details={"field": "requestId"})
        self.held[correlation_id] = held
        acks = self._received.take_acks(held.reply)
        if acks is not None:  # acknowledged while it waited: those acks count
            held.acked = True
            held.sent += acks[0]
            held.acked_at = acks[1]
        if self._early and self._early.pop(correlation_id, None) == held.sender:
            held.cancel(WITHDRAWN)  # withdrawn while it waited to be handled

    def release(self, correlation_id: str, held: Held) -> None:
        """The handling of ``held`` ended: from now on nothing cancels its task on its behalf."""
        held.released = True
        if self.held.get(correlation_id) is held:
            del self.held[correlation_id]

    async def on_cancel(self, msg: Message) -> None:
        """A cancel notice: withdraw the calls it names that its sender sent.

        Or, with ``A2A-Probe: calls``, a caller asking which instance received calls nobody
        acknowledged yet: those received here are acknowledged to it (see :meth:`claim`).
        """
        notice = decode_cancel(msg.data)
        if notice is None:
            self.cancel_rejects("malformed", msg.subject)
            return
        sender = self.link.subjects.sender_of(msg.subject)
        if msg.headers and msg.headers.get(PROBE_HEADER) == PROBE_CALLS:
            reply = msg.reply
            runtime = None
            if reply and (not self._strict or self._answerable(msg.subject, reply)):
                if self._heard is not None:
                    self._heard(reply)
                runtime = self.link.subjects.runtime_prefix(reply)
                if runtime is not None and not runtime.startswith(f"{self._runtime_replies}{sender}."):
                    runtime = None  # not the asking sender's own runtime: held calls only
            await self.claim(notice.correlation_ids, sender, runtime)
            return
        self.withdraw(notice.correlation_ids, sender)

    async def claim(self, correlation_ids: Iterable[str], sender: str, runtime: str | None = None) -> None:
        """Acknowledge the calls of ``sender`` among ``correlation_ids`` that this instance received.

        Those it holds, and with ``runtime`` (the reply prefix of the asking runtime, which
        ends each of its calls' reply subjects with the call's id) those received and not
        handled yet: queued behind busy handlers, they are not lost. A call is acknowledged
        at most once per PROBE_EVERY (probes read in a burst after the event loop was
        blocked ask the same), and under generated permissions an ack sent again leaves
        the room kept for caller checks.
        """
        ack = {ACK_HEADER: self.instance_id}
        now = anyio.current_time()
        strict = self._strict
        for correlation_id in correlation_ids:
            held = self.held.get(correlation_id)
            if held is None:
                waiting = None if runtime is None else runtime + correlation_id
                limit = QUEUED_ACKS if strict else None
                if waiting is not None and self._received.ack_waiting(waiting, now, limit):
                    await self._publish(waiting, b"", ack)
                continue
            if (
                held.released
                or held.sender != sender
                or not held.reply.startswith(self._runtime_replies)
                or (held.acked and now - held.acked_at < PROBE_EVERY)
                or (strict and not held.fits(CHECK_ROOM if held.acked else 0))
            ):
                continue
            held.acked = True
            held.acked_at = now
            held.sent += 1
            await self._publish(held.reply, b"", ack)

    def withdraw(self, correlation_ids: Iterable[str], sender: str) -> None:
        """Stop the handlers of calls that ``sender`` sent and now withdraws.

        A notice naming a call someone else sent is ignored (and counted): with
        credentials, the server proves the sender token of both subjects.
        """
        for correlation_id in correlation_ids:
            held = self.held.get(correlation_id)
            if held is None:  # not held yet (queued here), or not here at all: remembered a while
                self._early[correlation_id] = sender
                if len(self._early) > EARLY_CANCELS:
                    del self._early[next(iter(self._early))]
                continue
            if held.sender != sender:
                self.cancel_rejects("not the sender", f"{correlation_id} from {sender!r}")
                continue
            held.cancel(WITHDRAWN)

    def lost_connection(self) -> None:
        """The connection came back: under generated permissions, the calls that arrived on the
        lost one can be answered only once their callers send them again (``A2A-Resend``)."""
        if self._strict:
            self._received.lost_connection(
                (held.reply for held in self.held.values() if not held.released),
                self.link.subjects.runtime_prefix,
            )

    def cancel_all(self, reason: str) -> None:
        for held in list(self.held.values()):
            held.cancel(reason)

    def stop_runtime(self, prefix: str) -> int:
        """Stop the calls held for the runtime whose reply subjects start with ``prefix``, which
        is gone (CALLER_GONE); returns how many.

        They send no reply, and none is kept: a call that runtime sends again (it had only
        lost its connection) is handled again.
        """
        stopped = 0
        for held in list(self.held.values()):
            if held.reply.startswith(prefix) and held.reason is None and not held.released:
                held.cancel(CALLER_GONE)
                self._received.forget(held.reply)
                stopped += 1
        return stopped

    async def sweep(self, now: float) -> None:
        """Stop calls past their deadline; tell callers which instance holds their long calls.

        One periodic sweep instead of a timer per request keeps timer bookkeeping off the
        request path.
        """
        ack = {ACK_HEADER: self.instance_id}
        for held in list(self.held.values()):
            if held.released:
                continue  # it ended while an earlier ack was being published
            if now >= held.deadline:
                held.cancel(DEADLINE)
            if held.acked or now - held.started < ACK_AFTER:
                continue
            held.acked = True
            held.acked_at = now
            # Only runtimes understand acks; a plain NATS requester would take one for the reply.
            # Under generated permissions the reply must still fit after it.
            if held.reply.startswith(self._runtime_replies) and (not self._strict or held.fits(0)):
                held.sent += 1
                await self._publish(held.reply, b"", ack)

    # -- replies ---------------------------------------------------------------------------

    async def respond(
        self, reply: str, request: RequestEnvelope, result: Any, usage: TokenUsage | None
    ) -> A2AError | None:
        """Send the handler's result; returns the error sent instead when the result cannot travel."""
        meta = request.metadata
        error: A2AError
        try:
            data = encode_response(request, self.agent, result, usage)
        except ENCODE_ERRORS as exc:
            error = AgentError(f"result of {request.payload.action!r} is not JSON-serialisable: {exc}")
        else:
            limit = self.link.max_payload
            if len(data) <= limit:
                await self._send(reply, data, meta.batch_replies)
                return None
            error = PayloadTooLarge(
                f"envelope of {len(data)} bytes exceeds the {limit}-byte message limit",
                details={"size": len(data), "limit": limit},
            )
        error.located(self.agent, meta.hop_count)
        await self.fail(reply, request, error, usage)
        return error

    async def fail(
        self, reply: str, request: Envelope | None, error: A2AError, usage: TokenUsage | None = None
    ) -> None:
        """Send a typed error (nothing when the caller withdrew the call or is gone)."""
        reason = error.details.get("reason") if isinstance(error, Cancelled) else None
        if reason in (WITHDRAWN, CALLER_GONE):  # nobody reads this reply
            # One sent again after a reconnect is handled again (:meth:`stop_runtime`); one
            # withdrawn is done with: a repeat gets nothing.
            if reason == WITHDRAWN:
                self._received.answered(reply, None)
            return
        envelope = error_to(request, self.agent, reply, error, usage)
        batch = request is not None and request.metadata.batch_replies
        try:
            data = encode_answer(envelope, request, self.link.max_payload)
        except (A2AError, *ENCODE_ERRORS):
            # Details or a message too large (or odd) to travel: the code alone still does.
            envelope.payload.error = ErrorInfo(
                code=error.code, message=error.message[:1000], agent=error.agent, hop=error.hop
            )
            envelope.payload.usage = usage
            data = encode_answer(envelope, request, self.link.max_payload)
        await self._send(reply, data, batch)

    async def _send(self, reply: str, data: bytes, batch: bool) -> None:
        """Send a reply (batched when its caller accepts that), keeping it to answer a repeat."""
        # A runtime's call: keep the reply in case it is sent again.
        self._received.answered(reply, data if len(data) <= REPLY_CACHE_BYTES else None)
        try:
            await self.link.reply(reply, data, batch=batch)
        except A2AError as exc:
            log.warning("%s: reply to %s lost: %s", self.instance_id, reply, exc)

    async def progress(self, reply: str, data: bytes) -> None:
        """Send a progress update on a call's reply subject (runtime callers only: a plain
        NATS requester would take it for the reply)."""
        if reply.startswith(self._runtime_replies):
            held = self.held.get(reply[reply.rfind(".") + 1 :])  # a runtime's reply ends with the call's id
            if held is not None and held.reply == reply:
                # Under generated permissions, keep room for the reply, the first ack and checks.
                if self._strict and not held.fits(CHECK_ROOM + (0 if held.acked else 1)):
                    self.progress_dropped += 1
                    return
                held.sent += 1
            await self._publish(reply, data, {PROGRESS_HEADER: "1"})

    async def _publish(self, subject: str, data: bytes, headers: Mapping[str, str] | None = None) -> None:
        try:
            await self.link.publish(subject, data, headers=headers)
        except A2AError as exc:
            log.warning("%s: reply to %s lost: %s", self.instance_id, subject, exc)
