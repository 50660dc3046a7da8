"""The bus adapter: envelopes over a transport, with correlation and limits."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio
import msgspec

from transports import (
    MessageTooLarge,
    Subscription,
    Transport,
    TransportError,
    is_no_responders,
)
from transports.base import Message

from . import codec
from ._pending import NO_RESPONDERS, TIMED_OUT, Outcome, PendingCalls, Reply
from .errors import (
    A2AError,
    AgentLost,
    DeadlineExceeded,
    InvalidEnvelope,
    NoResponders,
    PayloadTooLarge,
    PermissionDenied,
    Unavailable,
    error_from_info,
)
from .ids import new_id
from .limits import check_hops
from .subjects import Subjects
from .wire import Envelope, ErrorEnvelope, RequestEnvelope, ResponseEnvelope

__all__ = ["ACK_HEADER", "ALIVE_HEADER", "PROBE_HEADER", "Bus", "BusStats", "CancelNotice"]

log = logging.getLogger("a2a.bus")

# A callee that holds a call for a while sends an empty message with this header (its
# instance id) on the call's reply subject, so the caller knows whom to watch.
ACK_HEADER = "A2A-Ack"
# A caller asks an instance whether it is alive with an empty message carrying this
# header; the instance answers at once with ALIVE_HEADER. A dead instance has no
# subscription left, so the server answers "no responders" instead.
PROBE_HEADER = "A2A-Probe"
ALIVE_HEADER = "A2A-Alive"
# After a reconnect, subscriptions across a cluster take a moment to settle.
SETTLING = 2.0


class CancelNotice(msgspec.Struct, rename="camel"):
    """Published on ``a2a.<ns>.cancel`` when a caller withdraws calls."""

    correlation_ids: list[str]
    reason: str = "cancelled"


_cancel_encoder = msgspec.json.Encoder()
_cancel_decoder = msgspec.json.Decoder(CancelNotice)

CancelHandler = Callable[[list[str]], None]


@dataclass
class BusStats:
    requests: int = 0
    replies: int = 0
    errors: int = 0
    timeouts: int = 0
    no_responders: int = 0
    invalid_replies: int = 0
    lost: int = 0
    resent: int = 0


def _expire(future: asyncio.Future[Outcome]) -> None:
    if not future.done():
        future.set_result(TIMED_OUT)


class Bus:
    """Sends envelopes and matches replies to pending calls.

    ``request`` stamps the hop (``hopCount + 1``), refuses past ``maxHops``, publishes
    with a per-call reply subject ``a2a.<ns>.reply.<runtimeId>.<correlationId>`` and
    waits on a future for the reply until ``timeout``: a result, the callee's typed
    error, NO_RESPONDERS as soon as the server reports nobody listens, AGENT_LOST when
    the instance holding the call dies (see :meth:`watch`), or DEADLINE_EXCEEDED. The
    pending entry is removed however the call ends; a reply arriving after that is
    dropped and counted in ``pending.late_replies``.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        namespace: str = "default",
        runtime_id: str | None = None,
        identity: str = "anon",
        max_payload: int | None = None,
    ) -> None:
        self.transport = transport
        self.subjects = Subjects(namespace)
        self.runtime_id = runtime_id or new_id()
        self.reply_prefix = self.subjects.reply_prefix(identity, self.runtime_id)
        self.pending = PendingCalls()
        self.stats = BusStats()
        self._max_payload = max_payload
        self._reply_sub: Subscription | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._settling_until = 0.0
        self._retries: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Subscribe to this runtime's reply subjects."""
        self._loop = asyncio.get_running_loop()
        self.transport.on_permission_error = self._on_permission_error
        self.transport.on_reconnected = self.resend_unanswered
        self._reply_sub = await self.transport.subscribe(self.reply_prefix + "*", self._on_reply)

    async def aclose(self) -> None:
        for retry in self._retries:
            retry.cancel()
        if self._reply_sub is not None:
            await self._reply_sub.unsubscribe()
            self._reply_sub = None

    @property
    def max_payload(self) -> int:
        """The smaller of the server's max_payload and the configured limit."""
        limit = self.transport.max_payload
        return min(limit, self._max_payload) if self._max_payload else limit

    def encode(self, envelope: Envelope) -> bytes:
        """Encode, refusing what the server would refuse.

        Raises:
            PayloadTooLarge: the encoded envelope exceeds :attr:`max_payload`.
        """
        data = codec.encode_envelope(envelope)
        limit = self.max_payload
        if len(data) > limit:
            raise PayloadTooLarge(
                f"envelope of {len(data)} bytes exceeds the {limit}-byte message limit",
                details={"size": len(data), "limit": limit},
            )
        return data

    async def publish(
        self, subject: str, envelope: Envelope, *, headers: Mapping[str, str] | None = None
    ) -> None:
        """Publish without waiting for a reply (notifications, replies)."""
        await self.publish_raw(subject, self.encode(envelope), headers=headers)

    async def publish_raw(
        self,
        subject: str,
        data: bytes,
        *,
        reply: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Publish bytes, translating transport errors to A2A errors."""
        try:
            await self.transport.publish(subject, data, reply=reply, headers=headers)
        except MessageTooLarge as exc:
            raise PayloadTooLarge(str(exc), details={"size": exc.size, "limit": exc.limit}) from None
        except TransportError as exc:
            raise Unavailable(f"message server unavailable: {exc}") from None

    def stamp_hop(self, envelope: Envelope) -> None:
        """Count this hop on the envelope; MAX_HOPS_EXCEEDED past ``maxHops``."""
        envelope.metadata.hop_count += 1
        check_hops(envelope.metadata)

    async def request(
        self,
        subject: str,
        envelope: RequestEnvelope,
        *,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> ResponseEnvelope:
        """Send a request and wait for its response.

        Raises:
            A2AError: the callee's typed error, or NoResponders, AgentLost,
                DeadlineExceeded, PayloadTooLarge, MaxHopsExceeded or Unavailable.

        If the calling task is cancelled, the cancellation propagates and a cancel
        notice tells the callee to stop, as it does when the call times out.
        """
        self.stamp_hop(envelope)
        data = self.encode(envelope)
        correlation_id = envelope.metadata.correlation_id
        loop = self._loop
        assert loop is not None, "Bus.start() was not called"
        slot = self.pending.open(correlation_id, loop, subject)
        timer = loop.call_at(slot.opened + timeout, _expire, slot.future)
        outcome: object = TIMED_OUT
        self.stats.requests += 1
        reply = self.reply_prefix + correlation_id
        slot.request = (data, reply, headers)
        try:
            await self.publish_raw(subject, data, reply=reply, headers=headers)
            outcome = await slot.future
        finally:
            timer.cancel()
            self.pending.close(correlation_id)
            if outcome is TIMED_OUT:
                with anyio.CancelScope(shield=True):
                    await self._withdraw(correlation_id)
        if type(outcome) is bytes:
            return self._parse_reply(outcome, envelope)
        if outcome is NO_RESPONDERS:
            self.stats.no_responders += 1
            raise NoResponders(
                f"nobody serves {subject}",
                agent=_target_of(envelope),
                hop=envelope.metadata.hop_count,
            )
        if isinstance(outcome, A2AError):
            self.stats.lost += 1
            raise outcome
        self.stats.timeouts += 1
        raise DeadlineExceeded(
            f"no reply from {subject} within {timeout:.3f}s",
            agent=_target_of(envelope),
            hop=envelope.metadata.hop_count,
        )

    def _parse_reply(self, data: bytes, request: RequestEnvelope) -> ResponseEnvelope:
        try:
            reply = codec.decode_envelope(data)
        except InvalidEnvelope as exc:
            self.stats.invalid_replies += 1
            raise exc.located(_target_of(request), request.metadata.hop_count) from None
        if type(reply) is ResponseEnvelope:
            self.stats.replies += 1
            return reply
        if type(reply) is ErrorEnvelope and reply.payload.error is not None:
            self.stats.errors += 1
            error = error_from_info(reply.payload.error)
            error.usage = reply.payload.usage
            raise error
        self.stats.invalid_replies += 1
        raise InvalidEnvelope(
            f"expected a response or error envelope, got {reply.__class__.__name__}",
            agent=_target_of(request),
            details={"field": "type"},
        )

    async def _withdraw(self, correlation_id: str) -> None:
        """Tell whoever handles this call to stop (best effort, bounded)."""
        with anyio.move_on_after(1.0):
            try:
                await self.transport.publish(
                    self.subjects.cancel,
                    _cancel_encoder.encode(CancelNotice(correlation_ids=[correlation_id])),
                )
            except TransportError as exc:
                log.debug("could not publish cancel notice: %s", exc)

    async def _on_reply(self, msg: Message) -> None:
        correlation_id = msg.subject[len(self.reply_prefix) :]
        headers = msg.headers
        if headers:
            if ACK_HEADER in headers:
                self.pending.acknowledge(correlation_id, headers[ACK_HEADER])
                return
            if is_no_responders(msg):
                if not self._retry_while_settling(correlation_id):
                    self.pending.resolve(correlation_id, NO_RESPONDERS)
                return
        if not self.pending.resolve(correlation_id, msg.data):
            log.debug("late or unknown reply %s dropped", correlation_id)

    async def resend_unanswered(self) -> int:
        """After a reconnect, send again every call still waiting for its reply.

        A request or its reply may have died with the server the connection was on.
        Calls an instance acknowledged go to that instance, which answers a repeat
        from its reply cache instead of running it twice; the others go where they
        went before. Returns how many were sent.
        """
        assert self._loop is not None
        self._settling_until = self._loop.time() + SETTLING
        sent = 0
        for slot in self.pending.unanswered():
            sent += await self._send_again(slot)
        self.stats.resent += sent
        if sent:
            log.info("re-sent %d unanswered calls after reconnecting", sent)
        return sent

    async def _send_again(self, slot: Reply) -> bool:
        """Publish a pending call's request again: to the instance holding it, if one said so."""
        if slot.request is None:
            return False
        data, reply, headers = slot.request
        subject = self.subjects.instance(slot.instance) if slot.instance else slot.subject
        try:
            await self.transport.publish(subject, data, reply=reply, headers=headers)
        except TransportError as exc:
            log.debug("sending %s again failed: %s", subject, exc)
            return False
        return True

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
            if correlation_id in self.pending:
                await self._send_again(slot)

        def start() -> None:
            if self._reply_sub is None:
                return  # closed meanwhile
            task = loop.create_task(retry())
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)

        loop.call_later(0.1, start)
        return True

    def _on_permission_error(self, operation: str, subject: str) -> None:
        """The server refused a publish or subscription: fail the calls it concerns at once."""
        if operation.lower() == "publish":
            refused = PermissionDenied(
                f"the NATS server does not let this identity publish to {subject}",
                details={"subject": subject},
            )
            if not self.pending.fail_subject(subject, refused):
                log.error("NATS refused a publish to %s (permissions)", subject)
        else:
            log.error("NATS refused a subscription to %s (permissions): nothing will arrive there", subject)

    async def watch(self, *, probe_interval: float = 1.0) -> None:
        """Fail calls whose acknowledged instance died, well before their deadline.

        Every ``probe_interval`` seconds, each instance holding a call that has been out
        for longer than that is probed; when the server reports no responders for it,
        its calls end with AGENT_LOST. Runs until cancelled.
        """
        while True:
            await anyio.sleep(probe_interval)
            held = self.pending.acknowledged_before(anyio.current_time() - probe_interval)
            for instance, correlation_ids in held.items():
                if await self.probe(instance, timeout=probe_interval) is False:
                    for correlation_id in correlation_ids:
                        self.pending.resolve(
                            correlation_id,
                            AgentLost(
                                f"{instance} stopped responding while handling the call",
                                agent=instance,
                                details={"instance": instance},
                            ),
                        )

    async def probe(self, instance: str, *, timeout: float = 1.0) -> bool | None:
        """True if ``instance`` answers, False if nobody serves it, None if unsure (timeout)."""
        assert self._loop is not None
        token = "probe-" + new_id()
        slot = self.pending.open(token, self._loop, "")
        try:
            await self.transport.publish(
                self.subjects.instance(instance),
                b"",
                reply=self.reply_prefix + token,
                headers={PROBE_HEADER: "1"},
            )
            with anyio.move_on_after(timeout):
                outcome = await slot.future
                return outcome is not NO_RESPONDERS
        except TransportError:
            return None
        finally:
            self.pending.close(token)
        return None

    async def subscribe_cancels(self, on_cancel: CancelHandler) -> Subscription:
        """Call ``on_cancel(correlation_ids)`` for every cancel notice in this namespace."""

        async def handler(msg: Message) -> None:
            try:
                notice = _cancel_decoder.decode(msg.data)
            except msgspec.MsgspecError:
                log.warning("malformed cancel notice dropped")
                return
            on_cancel(notice.correlation_ids)

        return await self.transport.subscribe(self.subjects.cancel, handler)


def _target_of(envelope: Envelope) -> str:
    target = envelope.target_agent_id
    return target if isinstance(target, str) else ",".join(target)
