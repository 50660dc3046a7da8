"""The caller half of the delivery protocol: send, wait, resend, probe, withdraw.

A request goes out with a per-call reply subject ``<reply prefix><requestId>`` and
waits on a future until its timeout: a result, the callee's typed error, NO_RESPONDERS as
soon as the server reports nobody listens, AGENT_LOST when the instance holding the call
dies (see :class:`bus.watch.Watch`), or DEADLINE_EXCEEDED. The pending entry is removed
however the call ends; a reply arriving after that is dropped and counted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

import anyio

from transports import Message, Subscription, is_no_responders

from ._pending import NO_RESPONDERS, TIMED_OUT, PendingCalls, Reply, nobody_serves
from ._replies import CallerStats, batch_answer, outcome_of, parse_reply, target_of
from ._withdrawals import Withdrawals
from .errors import (
    A2AError,
    AgentLost,
    DeadlineExceeded,
    NoResponders,
    PermissionDenied,
    Unavailable,
)
from .forms import Forms
from .ids import new_id
from .limits import check_hops
from .link import Link
from .protocol import (
    ACK_HEADER,
    ALIVE_HEADER,
    MALFORMED,
    PROBE_HEADER,
    PROGRESS_HEADER,
    REPLIES_HEADER,
    RESEND_HEADER,
    SETTLING,
    decode_progress,
)
from .rejects import Rejects
from .subjects import instance_agent, is_name
from .tasks import TaskSet
from .wire import Envelope, RequestEnvelope, ResponseEnvelope

__all__ = ["Caller", "CallerStats", "Verdict"]

log = logging.getLogger("a2a.bus")

Verdict = Literal["answered", "nobody", "silent", "failed"]
"""What a probe found out (see :meth:`Caller.probe`)."""


class Caller:
    """Sends requests and matches replies to pending calls.

    Args:
        link: the transport, as the bus shares it.
        reply_prefix: this runtime's reply subjects start with it.
        withdraw_local: stops a call this process's own callee half holds (a call that
            was delivered locally never reaches another process's cancel subscription).
    """

    def __init__(self, link: Link, reply_prefix: str, withdraw_local: Callable[[str], None]) -> None:
        self.link = link
        self.reply_prefix = reply_prefix
        self.pending = PendingCalls()
        self.stats = CallerStats()
        self.rejects = Rejects(log, "reply")
        """Replies, batch lines and acknowledgements dropped as malformed or misdirected."""
        self._sub: Subscription | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._settling_until = 0.0
        self.reconnects = 0
        """Times the connection came back; a probe that spans one has no verdict."""
        self._retries = TaskSet()
        self.withdrawals = Withdrawals(link, withdraw_local, self._retries)
        self.forms = Forms(link)
        """Which form each request goes in (``bus.forms``)."""

    async def start(self) -> None:
        """Subscribe to this runtime's reply subjects."""
        self._loop = asyncio.get_running_loop()
        self.link.attach_prefix(self.reply_prefix, self.on_reply)
        self._sub = await self.link.subscribe(self.reply_prefix + "*", self.on_reply, take=self.take_reply)

    async def aclose(self) -> None:
        self.pending.aclose(Unavailable("the runtime closed before the reply came"))
        await self._retries.aclose()
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None

    async def request(
        self,
        subject: str,
        envelope: RequestEnvelope,
        *,
        timeout: float,
        headers: Mapping[str, str] | None = None,
        on_progress: Callable[[Any], None] | None = None,
        compact: bool | None = None,
    ) -> ResponseEnvelope:
        """Send a request and wait for its response, ``timeout`` seconds at most; meanwhile
        ``on_progress`` gets each progress update the callee sends (a decoded JSON value).

        The envelope is this hop's own: built for it with ``hopCount`` counting it and
        ``ttlMs`` the time left (envelopes are values; a retry sends another one). It goes
        in the compact form with ``compact``, by default as :attr:`forms` says.

        Raises:
            A2AError: the callee's typed error, or NoResponders, AgentLost,
                DeadlineExceeded, PayloadTooLarge, MaxHopsExceeded or Unavailable.

        If the calling task is cancelled, the cancellation propagates and the callee is
        told to stop, as it is when the call times out.
        """
        meta = envelope.metadata
        if meta.hop_count > meta.max_hops:
            check_hops(meta)
        if compact is None:
            compact = self.forms.compact(subject)
        data = self.link.encode(envelope, compact=compact)
        request_id = meta.key
        loop = self._loop
        assert loop is not None, "Caller.start() was not called"
        slot = self.pending.open(request_id, loop, subject, timeout)
        outcome: object = TIMED_OUT
        self.stats.requests += 1
        reply = self.reply_prefix + request_id
        slot.request, slot.envelope = (data, reply, headers), envelope
        slot.local = self.link.is_local(subject)
        slot.on_progress = on_progress
        try:
            await self.link.publish(subject, data, reply=reply, headers=headers)
            outcome = await slot.future
        finally:
            self.pending.close(request_id)
            # Nobody will read a reply any more: the callee stops (a lost holder may only
            # have been slow; a dead one gets a notice nobody receives).
            if outcome is TIMED_OUT:
                with anyio.CancelScope(shield=True):
                    await self.withdrawals.now(request_id, slot)
            elif type(outcome) is AgentLost:  # found with others, in a probe round
                self.withdrawals.soon(request_id, slot)
        if type(outcome) is bytes:
            if (
                compact
                and not slot.resent
                and self.forms.refused(outcome, subject, envelope)
                and (left := slot.deadline - loop.time()) > 0
            ):  # an older runtime could not read it, and handled nothing: the full form
                with anyio.CancelScope(shield=True):  # were it anyone else's refusal: the first stops
                    await self.withdrawals.now(request_id, slot)
                again = self.forms.again(envelope, left)
                return await self.request(
                    subject, again, timeout=left, headers=headers, on_progress=on_progress, compact=False
                )
            outcome = parse_reply(outcome, envelope, self.stats)
        if isinstance(outcome, Envelope):  # decoded here, or from a reply batch as it came
            response = outcome_of(outcome, envelope, self.stats)
            if not compact:
                self.forms.answered(subject)
            return response
        target = target_of(envelope)
        if outcome is NO_RESPONDERS:
            self.stats.no_responders += 1
            raise NoResponders(f"nobody serves {subject}", agent=target, hop=meta.hop_count)
        if isinstance(outcome, A2AError):
            self.stats.lost += 1
            raise outcome
        self.stats.timeouts += 1
        raise DeadlineExceeded(
            f"no reply from {subject} within {timeout:.3f}s", agent=target, hop=meta.hop_count
        )

    async def on_reply(self, msg: Message) -> None:
        if self.take_reply(msg):
            return
        # A probed instance lost the connection our calls came on: they are sent again.
        await self._resend_to(msg.headers.get(ALIVE_HEADER, "") if msg.headers else "")
        self._settle(msg)

    def take_reply(self, msg: Message) -> bool:
        """A message on this runtime's reply subjects, handled where it is read (see
        :meth:`transports.Transport.subscribe`); False for a probe's answer asking for calls
        to be sent again, which is :meth:`on_reply`'s."""
        headers = msg.headers
        if headers:
            if REPLIES_HEADER in headers:
                self._on_batch(msg.data)
                return True
            correlation_id = msg.subject[len(self.reply_prefix) :]
            if ACK_HEADER in headers:
                self._on_ack(correlation_id, headers[ACK_HEADER])
                return True
            if PROGRESS_HEADER in headers:
                self._on_progress(correlation_id, msg.data)
                return True
            if PROBE_HEADER in headers:  # a callee checking this runtime is still there
                return True
            if RESEND_HEADER in headers:
                return False
        self._settle(msg)
        return True

    def _settle(self, msg: Message) -> None:
        """End the call a reply (or the server's "no responders") is for."""
        correlation_id = msg.subject[len(self.reply_prefix) :]
        if msg.headers and is_no_responders(msg):
            if not self._retry_while_settling(correlation_id):
                self.pending.resolve(correlation_id, nobody_serves(self.pending.get(correlation_id)))
            return
        if not self.pending.resolve(correlation_id, msg.data):
            log.debug("late or unknown reply %s dropped", correlation_id)

    def _on_ack(self, correlation_id: str, instance: str) -> None:
        """An instance says it holds the call: it is probed from now on (and cancels go to it)."""
        slot = self.pending.get(correlation_id)
        if slot is None:
            return
        # It names a subject to probe later: only a valid token, and an instance of the agent
        # the call went to (whoever answers on the reply subject received the call).
        if is_name(instance) and instance_agent(instance) == self.link.subjects.agent_of(slot.subject):
            self.pending.acknowledge(correlation_id, instance)
        else:
            self.stats.invalid_replies += 1
            self.rejects("acknowledgement", f"{instance!r} for a call to {slot.subject}")

    def _on_progress(self, correlation_id: str, data: bytes) -> None:
        """Hand a progress update to its call's callback (dropped and counted: see CallerStats)."""
        slot = self.pending.get(correlation_id)
        on_progress = None if slot is None else slot.on_progress
        update = MALFORMED if on_progress is None else decode_progress(data)
        if on_progress is None or update is MALFORMED:
            self.stats.progress_dropped += 1
            return
        try:
            on_progress(update)
        except Exception:  # the callback's bug must not end the reply subscription
            log.exception("progress callback of call %s failed", correlation_id)

    def _on_batch(self, data: bytes) -> None:
        """Settle each call a reply batch answers (``bus/protocol.py``); bad lines are dropped.

        Each line is decoded and checked before it settles anything (``bus._replies.batch_answer``):
        it must answer that very request, whose message id only its callee saw. A line that
        does not is dropped and counted, and its call goes on waiting for its own reply.
        """
        resolve = self.pending.resolve
        for line in data.split(b"\n"):
            token, _, reply = line.partition(b" ")
            try:
                correlation_id = token.decode()
            except UnicodeDecodeError:
                correlation_id = ""
            if not correlation_id or not reply:
                self.stats.invalid_replies += 1
                self.rejects("malformed batch line", line[:100])
                continue
            slot = self.pending.get(correlation_id)
            if slot is None or slot.envelope is None or slot.future.done():
                self.pending.late_replies += 1
                log.debug("late or unknown reply %s dropped", correlation_id)
            elif (answer := batch_answer(reply, slot.envelope)) is None:
                self.stats.invalid_replies += 1
                self.rejects("batch line not answering its call", line[:100])
            else:
                resolve(correlation_id, answer)

    # -- after a reconnect -------------------------------------------------------------

    async def resend_unanswered(self) -> int:
        """After a reconnect, send again every call still waiting for its reply.

        A request or its reply may have died with the server the connection was on.
        Calls an instance acknowledged go to that instance, which answers a repeat
        from its reply cache instead of running it twice; the others go where they
        went before. Returns how many were sent.
        """
        assert self._loop is not None
        self._settling_until = self._loop.time() + SETTLING
        self.reconnects += 1
        sent = 0
        for slot in self.pending.unanswered():
            slot.unclaimed = 0  # rounds while disconnected told nothing
            sent += await self._send_again(slot)
        self.stats.resent += sent
        if sent:
            log.info("re-sent %d unanswered calls after reconnecting", sent)
        return sent

    async def _send_again(self, slot: Reply) -> bool:
        """Publish a pending call's request again: to the instance holding it, if one said so."""
        if slot.request is None or slot.local:
            return False
        data, reply, headers = slot.request
        slot.resent = True
        subject = self.link.subjects.instance(slot.instance) if slot.instance else slot.subject
        try:
            await self.link.publish(subject, data, reply=reply, headers=headers)
        except A2AError as exc:
            log.debug("sending %s again failed: %s", subject, exc)
            return False
        return True

    async def _resend_to(self, instance: str) -> None:
        """Send again the calls ``instance`` holds (it answers a repeat, never runs it twice)."""
        if not is_name(instance):
            return
        subjects = self.link.subjects
        sent = 0
        for slot in self.pending.unanswered():
            if slot.subject and (slot.instance or subjects.instance_of(slot.subject)) == instance:
                sent += await self._send_again(slot)
        self.stats.resent += sent

    def _retry_while_settling(self, correlation_id: str) -> bool:
        """Right after a reconnect, "no responders" may only mean the callee is reconnecting too.

        Within ``SETTLING`` seconds of a reconnect the request is sent again a little
        later instead (its deadline still applies); True when a retry was scheduled.
        """
        loop = self._loop
        slot = self.pending.get(correlation_id)
        if loop is None or slot is None or slot.request is None or loop.time() >= self._settling_until:
            return False

        async def retry() -> None:
            await anyio.sleep(0.1)
            if correlation_id in self.pending:
                await self._send_again(slot)

        self._retries.spawn(retry())
        return True

    def on_permission_error(self, operation: str, subject: str) -> None:
        """The server refused a publish or subscription: fail the calls it concerns at once."""
        if operation.lower() == "publish":
            refused = PermissionDenied(
                f"the NATS server does not let this identity publish to {subject}",
                details={"subject": subject},
            )
            if not self.pending.fail_subject(subject, refused):
                self.rejects("publish refused by the server", subject)
        else:
            self.rejects("subscription refused by the server", subject)

    # -- probes ------------------------------------------------------------------------------

    @property
    def settling(self) -> bool:
        """Right after a reconnect: "no responders" may only mean the other side reconnects too."""
        loop = self._loop
        return loop is not None and loop.time() < self._settling_until

    async def probe(
        self, subject: str, headers: Mapping[str, str], data: bytes = b"", *, timeout: float
    ) -> Verdict:
        """Publish a probe on ``subject`` with a reply subject of this runtime; wait ``timeout``.

        Returns "answered" (a message came back), "nobody" (the server says nobody
        subscribes to ``subject``), "silent" (delivered, no answer in time) or "failed":
        not published, published while disconnected (it would wait in a buffer), or the
        connection was lost or came back meanwhile, or "no responders" while settling.
        """
        assert self._loop is not None, "Caller.start() was not called"
        transport = self.link.transport
        if not transport.is_connected:
            return "failed"
        reconnects = self.reconnects
        token = "probe-" + new_id()
        slot = self.pending.open(token, self._loop, "")
        try:
            await self.link.publish(subject, data, reply=self.reply_prefix + token, headers=headers)
            verdict: Verdict = "silent"
            with anyio.move_on_after(timeout):
                outcome = await slot.future
                if outcome is not NO_RESPONDERS:
                    verdict = "answered"
                else:
                    verdict = "failed" if self.settling else "nobody"
            if verdict != "answered" and (reconnects != self.reconnects or not transport.is_connected):
                return "failed"  # the probe or its answer may have been lost with the connection
            return verdict
        except A2AError as exc:
            log.debug("probe of %s not sent: %s", subject, exc)
            return "failed"
        finally:
            self.pending.close(token)
