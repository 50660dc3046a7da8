"""In-memory transport with NATS semantics, for unit tests.

One :class:`MemoryBroker` plays the server; each :meth:`MemoryBroker.connect` is a
client. Delivery follows nats-server: subjects match with the same wildcard rules, one
member per queue group gets each message, every subscription is served by its own task
(never the publisher's), a request to a subject without subscribers gets a 503 status
message on its reply subject, and messages above ``max_payload`` are refused.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._match import subject_matches, validate_subject
from .base import NO_RESPONDERS_STATUS, MessageHandler, Subscription, Taker, Transport
from .errors import MessageTooLarge, TransportClosed

__all__ = ["MemoryBroker", "MemoryMessage", "MemoryTransport"]

log = logging.getLogger("a2a.transport.memory")


@dataclass(frozen=True, slots=True)
class MemoryMessage:
    subject: str
    data: bytes
    reply: str = ""
    headers: Mapping[str, str] | None = None


@dataclass(eq=False)
class _Sub(Subscription):
    broker: MemoryBroker
    subject: str
    queue: str
    send: MemoryObjectSendStream[MemoryMessage]
    client: MemoryTransport
    closed: bool = field(default=False)

    async def unsubscribe(self) -> None:
        self.broker.unsubscribe(self)


class MemoryBroker:
    """An in-process message server; use as ``async with MemoryBroker() as broker``."""

    def __init__(self, *, max_payload: int = 1024 * 1024) -> None:
        self.max_payload = max_payload
        self._subs: list[_Sub] = []
        self._round_robin = itertools.count()
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        for sub in list(self._subs):
            self.unsubscribe(sub)
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    def connect(self) -> MemoryTransport:
        """A new client connection to this broker."""
        return MemoryTransport(self)

    def subscribe(self, client: MemoryTransport, subject: str, queue: str, handler: MessageHandler) -> _Sub:
        if self._tg is None:
            raise RuntimeError("MemoryBroker must be entered with 'async with'")
        send, receive = anyio.create_memory_object_stream[MemoryMessage](math.inf)
        sub = _Sub(self, subject, queue, send, client)
        self._subs.append(sub)
        self._tg.start_soon(_deliver, receive, handler)
        return sub

    def unsubscribe(self, sub: _Sub) -> None:
        if not sub.closed:
            sub.closed = True
            self._subs.remove(sub)
            sub.send.close()

    def route(self, msg: MemoryMessage) -> int:
        """Deliver to matching subscribers; returns how many received it."""
        plain: list[_Sub] = []
        groups: dict[str, list[_Sub]] = {}
        for sub in self._subs:
            if subject_matches(sub.subject, msg.subject):
                if sub.queue:
                    groups.setdefault(sub.queue, []).append(sub)
                else:
                    plain.append(sub)
        targets = plain + [members[next(self._round_robin) % len(members)] for members in groups.values()]
        for sub in targets:
            sub.send.send_nowait(msg)
        return len(targets)


async def _deliver(receive: MemoryObjectReceiveStream[MemoryMessage], handler: MessageHandler) -> None:
    async with receive:
        async for msg in receive:
            try:
                await handler(msg)
            except Exception:  # nats-py reports a failing callback and keeps delivering
                log.exception("subscription handler failed on %s", msg.subject)


class MemoryTransport(Transport):
    """A client of a :class:`MemoryBroker`."""

    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker
        self._subs: list[_Sub] = []
        self._closed = False

    async def publish(
        self,
        subject: str,
        data: bytes,
        *,
        reply: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._check_open()
        validate_subject(subject, wildcards=False)
        if reply:
            validate_subject(reply, wildcards=False)
        if len(data) > self._broker.max_payload:
            raise MessageTooLarge(len(data), self._broker.max_payload)
        delivered = self._broker.route(MemoryMessage(subject, bytes(data), reply, headers))
        if not delivered and reply:
            self._broker.route(MemoryMessage(reply, b"", "", {"Status": NO_RESPONDERS_STATUS}))
        await anyio.lowlevel.checkpoint()

    async def subscribe(
        self, subject: str, handler: MessageHandler, *, queue: str = "", take: Taker | None = None
    ) -> Subscription:
        self._check_open()
        validate_subject(subject, wildcards=True)
        sub = self._broker.subscribe(self, subject, queue, handler)
        self._subs.append(sub)
        return sub

    async def flush(self, timeout: float = 5.0) -> None:
        self._check_open()
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            for sub in self._subs:
                self._broker.unsubscribe(sub)

    @property
    def max_payload(self) -> int:
        return self._broker.max_payload

    @property
    def is_connected(self) -> bool:
        return not self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise TransportClosed("memory transport is closed")
