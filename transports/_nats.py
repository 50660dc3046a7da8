"""Transport over a real NATS server, built on nats-py."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import nats
import nats.errors
from nats.aio.client import Client as NatsClient
from nats.aio.subscription import Subscription as NatsSubscription

from ._nats_client import Client, FastClient
from .base import MessageHandler, Subscription, Taker, Transport, TransportEvents
from .errors import MessageTooLarge, NotConnected, TransportClosed, TransportError

__all__ = ["NatsOptions", "NatsTransport"]


log = logging.getLogger("a2a.transport.nats")

_NKEY_USER_SEED = re.compile(r"SU[A-Z2-7]{56}")
_PERMISSION = re.compile(r'Permissions Violation for (Publish|Subscription) to "?([^"\s]+)"?', re.IGNORECASE)

RECONNECT_ATTEMPT = 2.0
"""Seconds a reconnect attempt may take at least: a server far away or slow to answer is
reconnected to, whatever share of ``connect_wait`` the first connection left each attempt."""

# Messages a subscription may hold before nats-py drops them as a "slow consumer".
# Subscribers in this project hand each message off at once, so this only absorbs bursts.
PENDING_MSGS_LIMIT = 256 * 1024
PENDING_BYTES_LIMIT = 256 * 1024 * 1024

NO_EVENTS = TransportEvents()
DRAIN_WAIT = 2
"""Seconds a draining subscription waits for the server to confirm it stopped routing to it."""


class _NatsSubscription(Subscription):
    def __init__(self, sub: NatsSubscription, nc: NatsClient) -> None:
        self._sub = sub
        self._nc = nc
        self.subject = sub.subject

    async def unsubscribe(self) -> None:
        with contextlib.suppress(nats.errors.ConnectionClosedError, nats.errors.BadSubscriptionError):
            await self._sub.unsubscribe()

    async def drain(self) -> None:
        if isinstance(self._nc, FastClient):
            await self._nc.stop_interest(self._sub, DRAIN_WAIT)
        await self.unsubscribe()


@dataclass(frozen=True, slots=True)
class NatsOptions:
    """How :meth:`NatsTransport.connect` connects: identity, credentials, TLS and timings."""

    name: str | None = None
    """The connection's name, as the server shows it."""
    user: str | None = None
    password: str | None = None
    token: str | None = None
    nkeys_seed: str | None = None
    """An NKey user seed (``SU...``), or a file holding it."""
    creds_file: str | None = None
    tls: ssl.SSLContext | None = None
    connect_timeout: float = 5.0
    """Seconds one attempt to reach a server may take at most."""
    connect_wait: float = 2.0
    """Seconds to keep trying for the first connection (servers may still be starting)."""
    reconnect_time_wait: float = 0.25
    ping_interval: float = 10.0
    inbox_prefix: str | None = None
    """Request inboxes a server may let only this user subscribe to."""


class NatsTransport(Transport):
    """A NATS connection that reconnects forever and reports slow consumers.

    Build one with :meth:`connect`; ``nc`` is the underlying nats-py client.
    """

    def __init__(self, nc: NatsClient, events: TransportEvents = NO_EVENTS) -> None:
        self.nc = nc
        self.events = events
        self.slow_consumer_drops = 0
        self.reflected = 0
        """Messages the JetStream server published on this connection's subscriptions
        (:meth:`subscribe`) and that were dropped."""
        self.closing = False
        self.on_reconnect: list[Callable[[], Awaitable[None]]] = []
        """Also told of each reconnection (after ``events``): what listens on this connection
        and may have missed messages meanwhile."""

    @classmethod
    async def connect(
        cls,
        servers: str | Sequence[str],
        options: NatsOptions = NatsOptions(),
        events: TransportEvents = NO_EVENTS,
    ) -> NatsTransport:
        """Connect to ``servers`` (``nats://host:port``, comma-separated or a list); ``events``
        are told of refused permissions and reconnections.

        Keeps trying for ``connect_wait`` seconds (servers may still be starting); once
        connected, it reconnects forever. One attempt to reach a server takes
        ``connect_timeout`` seconds at most, and for the first connection less when
        ``connect_wait`` must leave time to try every server: a server that swallows
        connections without a word (a blackholed address) does not use up the time the
        others need. Reconnect attempts may take ``connect_timeout``, and RECONNECT_ATTEMPT
        seconds at least.

        Raises:
            TransportError: no server could be reached in time, or authentication or
                TLS failed; the message says the last reason.
        """
        o = options
        if isinstance(servers, str):
            servers = [s.strip() for s in servers.split(",") if s.strip()]
        transport: NatsTransport | None = None
        last_error: list[Exception] = []

        async def error_cb(exc: Exception) -> None:
            if transport is None:
                last_error[:] = [exc]  # still connecting: remember why the attempt failed
                return
            if isinstance(exc, nats.errors.SlowConsumerError) and transport is not None:
                transport.slow_consumer_drops += 1
                log.error("slow consumer on %s: message dropped", exc.subject)
                return
            if not isinstance(exc, nats.errors.Error | OSError):
                log.error("subscription handler failed", exc_info=exc)  # a bug in a handler
                return
            refused = _PERMISSION.search(str(exc))
            if refused and events.permission_error is not None:
                events.permission_error(refused.group(1), refused.group(2))
            else:
                log.debug("nats: %s", exc)

        async def disconnected_cb() -> None:
            if transport is not None and not transport.closing:
                log.warning("disconnected from NATS; reconnecting")

        async def reconnected_cb() -> None:
            log.warning("reconnected to NATS at %s", nc.connected_url)
            if events.reconnected is not None:
                await events.reconnected()
            for listener in transport.on_reconnect if transport is not None else ():
                await listener()

        settings: dict[str, Any] = dict(
            servers=list(servers),
            name=o.name,
            error_cb=error_cb,
            disconnected_cb=disconnected_cb,
            reconnected_cb=reconnected_cb,
            allow_reconnect=True,
            max_reconnect_attempts=-1,
            reconnect_time_wait=o.reconnect_time_wait,
            connect_timeout=_attempt_timeout(o.connect_timeout, o.connect_wait, len(servers)),
            ping_interval=o.ping_interval,
            max_outstanding_pings=3,
            user=o.user,
            password=o.password,
            token=o.token,
            tls=o.tls,
            # Subjects are built and validated by bus.Subjects; checking them again with a
            # regular expression on every publish costs more than the rest of a publish.
            skip_subject_validation=True,
        )
        if o.nkeys_seed:  # the seed itself (SU...), or a file holding it
            is_seed = _NKEY_USER_SEED.fullmatch(o.nkeys_seed) is not None
            settings["nkeys_seed_str" if is_seed else "nkeys_seed"] = o.nkeys_seed
        if o.creds_file:
            settings["user_credentials"] = o.creds_file
        if o.inbox_prefix:  # request inboxes a server may let only this user subscribe to
            settings["inbox_prefix"] = o.inbox_prefix
        nc = Client()
        try:
            with anyio.fail_after(o.connect_wait):
                await nc.connect(**settings)
        except TimeoutError:
            await _close_quietly(nc)
            reason = f": {_describe(last_error[0])}" if last_error else ": no answer"
            raise TransportError(
                f"cannot connect to NATS at {', '.join(servers)} within {o.connect_wait:g}s{reason}"
            ) from None
        except Exception as exc:  # nats-py raises a variety of errors and OSErrors here
            await _close_quietly(nc)
            raise TransportError(f"cannot connect to NATS at {', '.join(servers)}: {exc}") from exc
        # nats-py reads this option at every attempt, reconnects included: from now on an
        # attempt may take as long as a slow link needs (nothing waits on it at start-up).
        nc.options["connect_timeout"] = max(RECONNECT_ATTEMPT, o.connect_timeout)
        transport = cls(nc, events)
        return transport

    async def publish(
        self,
        subject: str,
        data: bytes,
        *,
        reply: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        try:
            await self.nc.publish(subject, data, reply=reply, headers=dict(headers) if headers else None)
        except nats.errors.MaxPayloadError as exc:
            raise MessageTooLarge(len(data), self.nc.max_payload) from exc
        except nats.errors.OutboundBufferLimitError as exc:
            raise NotConnected("NATS is disconnected and the reconnect buffer is full") from exc
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError) as exc:
            raise TransportClosed("NATS connection is closed") from exc
        except nats.errors.Error as exc:
            raise TransportError(str(exc) or type(exc).__name__) from exc

    async def subscribe(
        self, subject: str, handler: MessageHandler, *, queue: str = "", take: Taker | None = None
    ) -> Subscription:
        """Subscribe ``handler``; messages the JetStream server published itself are refused.

        ``take`` is offered each message in the connection's read loop, before nats-py
        queues it for the subscription's task (see :class:`FastClient`).

        The server answers a JetStream request on whatever reply subject the requester
        names: a direct get with the stored message, its ``Nats-Stream`` header added; a
        pull with the queued message, its reply a ``$JS.ACK`` subject. Nothing the bus
        receives comes that way, so such a message is someone having the server carry
        bytes of its choosing: dropped, counted in ``reflected`` and logged.
        """

        async def cb(msg: Any) -> None:
            headers = msg.headers
            if (headers and "Nats-Stream" in headers) or msg.reply.startswith("$JS."):
                self._reflected(msg.subject)
                return
            await handler(msg)

        return await self._subscribe(subject, cb, queue, take)

    async def subscribe_stored(self, subject: str, handler: MessageHandler) -> Subscription:
        """Subscribe ``handler`` to messages JetStream publishes itself (a stream's republished
        writes): the handler checks their headers against what it expects."""
        cb = handler
        if not inspect.iscoroutinefunction(handler):

            async def cb(msg: Any) -> None:
                await handler(msg)

        return await self._subscribe(subject, cb, "", None)

    def _reflected(self, subject: str) -> None:
        self.reflected += 1
        if self.reflected & (self.reflected - 1) == 0:  # the 1st, 2nd, 4th, 8th... in the log
            log.warning("dropped a message JetStream published on %s (%d so far)", subject, self.reflected)

    async def _subscribe(self, subject: str, cb: Any, queue: str, take: Taker | None) -> Subscription:
        # nats-py awaits the callback in the subscription's own task, catches what it
        # raises and hands it to error_cb (logged there).
        options = {
            "queue": queue,
            "cb": cb,
            "pending_msgs_limit": PENDING_MSGS_LIMIT,
            "pending_bytes_limit": PENDING_BYTES_LIMIT,
        }
        nc = self.nc
        try:
            if take is not None and isinstance(nc, FastClient):
                sub = await nc.subscribe_taking(subject, take, **options)
            else:
                sub = await nc.subscribe(subject, **options)
        except nats.errors.ConnectionClosedError as exc:
            raise TransportClosed("NATS connection is closed") from exc
        except nats.errors.Error as exc:
            raise TransportError(str(exc) or type(exc).__name__) from exc
        return _NatsSubscription(sub, nc)

    async def flush(self, timeout: float = 5.0) -> None:
        # nats-py writes the flush PING straight to the socket while earlier commands
        # (a SUB, say) still wait in its buffer for the flusher task, so the PONG can
        # come back before the server has seen them. Yielding first lets the flusher,
        # already woken by those commands, write them ahead of the PING.
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        try:
            await self.nc.flush(timeout=max(1, round(timeout)))
        except nats.errors.ConnectionClosedError as exc:
            raise TransportClosed("NATS connection is closed") from exc
        except nats.errors.Error as exc:
            raise TransportError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self.closing = True
        await _close_quietly(self.nc)

    @property
    def take_failures(self) -> int:
        """Messages lost because a subscription's taker raised (each logged)."""
        return self.nc.take_failures if isinstance(self.nc, FastClient) else 0

    @property
    def malformed(self) -> int:
        """Messages dropped because they could not be read (a subject or header status that
        is not UTF-8), each counted, the first and every power of two logged."""
        return self.nc.malformed if isinstance(self.nc, FastClient) else 0

    @property
    def max_payload(self) -> int:
        return int(self.nc.max_payload)

    @property
    def is_connected(self) -> bool:
        return bool(self.nc.is_connected)


def _describe(exc: Exception) -> str:
    if str(exc):
        return str(exc)
    return "the server did not answer in time" if isinstance(exc, TimeoutError) else type(exc).__name__


def _attempt_timeout(limit: float, wait: float, servers: int) -> float:
    """Seconds one connection attempt may take: ``limit``, and at most a share of ``wait``
    that lets every server be tried once (never under half a second: a TLS handshake)."""
    return max(0.5, min(limit, wait / (servers + 1)))


async def _close_quietly(nc: NatsClient) -> None:
    if nc.is_closed:
        return
    try:
        await nc.close()
    except Exception as exc:  # closing a half-open connection may raise anything
        log.debug("error closing NATS connection: %s", exc)
