"""The bus: both halves of the delivery protocol over one transport."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import anyio

from transports import Transport

from ._pending import PendingCalls
from .callee import Deliver, Endpoint
from .caller import Caller, CallerStats
from .callers import Callers
from .ids import new_id
from .limits import check_hops
from .link import Link
from .protocol import SWEEP_EVERY
from .subjects import Subjects
from .watch import Watch
from .wire import Envelope

__all__ = ["Bus"]

log = logging.getLogger("a2a.bus")


class Bus:
    """Sends and answers envelopes: the caller half (:class:`Caller`) and this process's endpoints.

    ::

        bus = Bus(transport, namespace="prod", runtime_id=rt_id)
        await bus.start()                    # reply and cancel subscriptions
        tg.start_soon(bus.run)               # probes, checks and held-call sweeps, until cancelled
        response = await bus.caller.request(subject, envelope, timeout=5.0)
        endpoint = await bus.endpoint("reader", "reader-1a2b", deliver=host.deliver)

    A request for an endpoint of this process is handed to it directly (see :class:`Link`).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        namespace: str = "default",
        runtime_id: str | None = None,
        identity: str = "anon",
        max_payload: int | None = None,
        strict: bool = False,
    ) -> None:
        subjects = Subjects(namespace, identity)
        self.runtime_id = runtime_id or new_id()
        self.link = Link(transport, subjects, max_payload=max_payload)
        self.reply_prefix = subjects.reply_prefix(identity, self.runtime_id)
        self.caller = Caller(self.link, self.reply_prefix, self.withdraw)
        self.watch = Watch(self.caller)
        """Probe rounds that end calls whose callee died (AGENT_LOST)."""
        self.callers = Callers(self.caller, self.reply_prefix, strict=strict)
        """The runtimes calling this process's endpoints; stops the calls of those gone."""
        self.endpoints: list[Endpoint] = []
        self.strict = strict
        """The server proves senders: endpoints answer only on reply subjects of the sender."""

    @property
    def transport(self) -> Transport:
        return self.link.transport

    @property
    def subjects(self) -> Subjects:
        return self.link.subjects

    @property
    def pending(self) -> PendingCalls:
        return self.caller.pending

    @property
    def stats(self) -> CallerStats:
        return self.caller.stats

    async def start(self) -> None:
        """Subscribe to this runtime's replies."""
        await self.caller.start()

    async def aclose(self) -> None:
        await self.caller.aclose()
        await self.link.aclose()

    async def run(self) -> None:
        """Probe for long calls, check quiet callers, and sweep held calls, until cancelled."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch.run)
            tg.start_soon(self.callers.run, lambda: self.endpoints)
            while True:
                await anyio.sleep(SWEEP_EVERY)
                now = anyio.current_time()
                for endpoint in list(self.endpoints):
                    await endpoint.sweep(now)

    def permission_refused(self, operation: str, subject: str) -> None:
        """The server refused a publish or subscription (see :class:`transports.TransportEvents`)."""
        self.caller.on_permission_error(operation, subject)

    async def reconnected(self) -> None:
        """The connection came back (see :class:`transports.TransportEvents`): resend what may be lost."""
        self.link.refresh()
        self.callers.reconnected()
        for endpoint in self.endpoints:
            endpoint.lost_connection()
        await self.watch.claims()  # who holds the calls to queue groups, before they go again
        await self.caller.resend_unanswered()

    # -- caller half (see :class:`Caller`) ----------------------------------------------------

    async def resend_unanswered(self) -> int:
        return await self.caller.resend_unanswered()

    async def publish(self, subject: str, envelope: Envelope) -> None:
        """Publish an envelope that expects no reply (a notification); refused past ``maxHops``."""
        check_hops(envelope.metadata)
        await self.link.publish(subject, self.link.encode(envelope))

    # -- callee half -----------------------------------------------------------------------

    async def endpoint(
        self, agent: str, instance_id: str, *, deliver: Deliver, topics: Iterable[str] = ()
    ) -> Endpoint:
        """Open an agent instance's endpoint; messages that need handling go to ``deliver``."""
        endpoint = Endpoint(
            self.link,
            agent=agent,
            instance_id=instance_id,
            topics=topics,
            deliver=deliver,
            runtime_replies=self.subjects.reply_root,
            strict=self.strict,
            heard=self.callers.heard,
        )
        await endpoint.open()
        self.endpoints.append(endpoint)
        return endpoint

    def forget(self, endpoint: Endpoint) -> None:
        """Drop a closed endpoint whose calls have all ended."""
        if endpoint in self.endpoints:
            self.endpoints.remove(endpoint)

    def withdraw(self, correlation_id: str) -> None:
        """Stop a call this runtime sent to one of its own endpoints."""
        sender = self.subjects.sender
        for endpoint in self.endpoints:
            endpoint.withdraw((correlation_id,), sender)
