"""Push-notification delivery: each replica takes due channels from the shared queue and POSTs.

One POST per logged event of a task (status updates and artifact updates, as its streams
carry them), in order, to each configured URL. The body is the event's ``StreamResponse``
(1.0 JSON, ``application/a2a+json``); the headers:

    X-A2A-Event-Id            ``<taskId>:<n>``, the event's number in the task's log: the same
                              on every retry, from any replica (receivers drop duplicates by it)
    X-A2A-Timestamp           seconds since the epoch when this attempt was signed
    X-A2A-Signature           ``v1=<hex>``: HMAC-SHA256 under the configuration's signing secret
                              of ``<event id>.<timestamp>.<body>``
    X-A2A-Notification-Token  the configuration's ``token``, if it has one
    Authorization             ``<scheme> <credentials>`` of its ``authentication`` (except the
                              ``HMAC-SHA256`` scheme, whose credentials are the signing secret)

A receiver verifies with :func:`verify`: recompute the HMAC, compare in constant time, and
refuse a timestamp too far from its clock (a replayed request).

An answer of 2xx delivers the event; 408, 425, 429, 5xx, a connection failure or a timeout
is retried after a back-off that doubles from ``push_backoff`` up to ``push_backoff_max``
seconds (with jitter), for up to ``push_give_up`` seconds, after which the channel's pending
events are dropped; any other answer, or a URL the guard now refuses, drops that one event.
Redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import random
import time
from contextlib import suppress

import anyio
import anyio.abc
import httpx

from bus.errors import Unavailable
from transports.a2a_http import codec

from .config import GatewayConfig
from .push_guard import PushGuard, Refused
from .push_store import Progress, PushStore, StoredConfig, split_channel
from .tasks import Numbered, TaskStore

__all__ = ["HMAC_SCHEME", "PushSender", "sign", "verify"]

log = logging.getLogger("a2a.gateway.push")

HMAC_SCHEME = "HMAC-SHA256"
"""The ``authentication.scheme`` whose ``credentials`` are the configuration's signing secret."""
_RETRIED = frozenset({408, 425, 429})
_POLL = 1.0


def sign(secret: str, event_id: str, timestamp: str, body: bytes) -> str:
    """The ``X-A2A-Signature`` value of one POST."""
    message = f"{event_id}.{timestamp}.".encode() + body
    return "v1=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(secret: str, headers: dict[str, str], body: bytes, *, tolerance: float = 300.0) -> bool:
    """Whether a received push notification is signed with ``secret`` and signed recently
    (``headers`` with lower-case names)."""
    event_id = headers.get("x-a2a-event-id", "")
    timestamp = headers.get("x-a2a-timestamp", "")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > tolerance:
        return False
    expected = sign(secret, event_id, timestamp, body)
    return hmac.compare_digest(expected, headers.get("x-a2a-signature", ""))


class PushSender:
    """Delivers the due channels of the shared queue from one replica."""

    def __init__(
        self,
        store: PushStore,
        tasks: TaskStore,
        guard: PushGuard,
        config: GatewayConfig,
        holder: str,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.guard = guard
        self.config = config
        self.holder = holder
        self.client = client
        self.active: set[str] = set()
        self._wake = anyio.Event()

    def wake(self) -> None:
        """Look at the queue now (new events were queued here)."""
        self._wake.set()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Deliver until cancelled."""
        timeout = httpx.Timeout(self.config.push_timeout)
        async with (
            httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as own,
            anyio.create_task_group() as tg,
        ):
            self.client = self.client or own
            task_status.started()
            while True:
                try:
                    wait = await self._claim(tg)
                except Unavailable as exc:
                    log.warning("push queue unreadable (%s); retrying", exc)
                    wait = _POLL
                with anyio.move_on_after(wait):
                    await self._wake.wait()
                self._wake = anyio.Event()

    async def _claim(self, tg: anyio.abc.TaskGroup) -> float:
        """Start delivering the due channels this replica can lease; the seconds until the next look."""
        room = self.config.push_concurrency - len(self.active)
        due, first = await self.store.due(max(room, 0) + len(self.active))
        claimed = 0
        for channel in due:
            if len(self.active) >= self.config.push_concurrency:
                break
            if channel in self.active:
                continue
            if await self.store.lease(channel, self.holder, self.config.push_lease):
                self.active.add(channel)
                tg.start_soon(self._deliver, channel)
                claimed += 1
        if first is None:
            return _POLL
        until = first / 1000 - time.time()
        return min(_POLL, until) if until > 0 else (_POLL if not claimed else 0.05)

    async def _deliver(self, channel: str) -> None:
        try:
            await self._deliver_channel(channel)
        except Unavailable as exc:
            log.warning("push channel %s: %s", channel, exc)
        finally:
            self.active.discard(channel)
            # Unreleased, the lease expires.
            with anyio.CancelScope(shield=True), anyio.move_on_after(2), suppress(Unavailable):
                await self.store.release(channel)
            self.wake()

    async def _deliver_channel(self, channel: str) -> None:
        task_id, config_id = split_channel(channel)
        stored = await self.store.get(task_id, config_id)
        if stored is None:
            await self.store.settle(channel)
            return
        sent, progress = await self.store.progress(task_id, config_id)
        deadline = anyio.current_time() + self.config.push_lease / 2
        while anyio.current_time() < deadline:
            events = await self.tasks.events_after(task_id, sent)
            if not events:
                await self.store.settle(channel)
                # An event logged since the read above made the channel due again, unless the
                # settle came after that: look once more.
                if not await self.tasks.events_after(task_id, sent):
                    return
                await self.store.wake(task_id, [config_id])
                return
            for event in events:
                outcome = await self._post(stored, task_id, event)
                if outcome == "retry":
                    await self._failed(channel, stored, progress, events[-1].seq)
                    return
                sent = event.seq
                progress = Progress()
                await self.store.sent(task_id, config_id, sent)
                if anyio.current_time() >= deadline:
                    break
        await self.store.wake(task_id, [config_id])  # more to do: a later turn, perhaps elsewhere

    async def _failed(self, channel: str, stored: StoredConfig, progress: Progress, last: int) -> None:
        now = int(time.time() * 1000)
        since = progress.since or now
        if now - since > self.config.push_give_up * 1000:
            log.warning("push channel %s: undeliverable since %d ms; pending events dropped", channel, since)
            task_id, config_id = split_channel(channel)
            await self.store.sent(task_id, config_id, last)
            await self.store.settle(channel)
            return
        tries = progress.tries + 1
        delay = min(self.config.push_backoff * 2 ** (tries - 1), self.config.push_backoff_max)
        delay *= random.uniform(0.8, 1.0)
        await self.store.retry(channel, now + int(delay * 1000), Progress(tries, since))

    async def _post(self, stored: StoredConfig, task_id: str, event: Numbered) -> str:
        """``"ok"``, ``"retry"`` or ``"drop"`` (an answer or a URL that no retry will change)."""
        config = stored.config
        try:
            target = await self.guard.check(config.url)
        except Refused as exc:
            log.warning("push to task %s config %s refused: %s", task_id, config.id, exc)
            return "drop"
        body = codec.encode(event.event)
        event_id = f"{task_id}:{event.seq}"
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/a2a+json",
            "X-A2A-Event-Id": event_id,
            "X-A2A-Timestamp": timestamp,
            "X-A2A-Signature": sign(stored.secret, event_id, timestamp, body),
        }
        if config.token:
            headers["X-A2A-Notification-Token"] = config.token
        auth = config.authentication
        if auth is not None and auth.scheme and auth.scheme.upper() != HMAC_SCHEME:
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}".strip()
        url = httpx.URL(config.url)
        headers["Host"] = url.netloc.decode("ascii")
        pinned = url.copy_with(host=str(target.address))
        extensions = {}
        if url.scheme == "https":
            # TLS checks the URL's own name; the connection is not reused, since the pool knows
            # it by address only and another host at that address must not get it.
            extensions["sni_hostname"] = target.host
            headers["Connection"] = "close"
        assert self.client is not None
        try:
            response = await self.client.post(pinned, content=body, headers=headers, extensions=extensions)
        except httpx.HTTPError as exc:
            log.info("push %s to %s failed: %s", event_id, target.host, exc)
            return "retry"
        if response.is_success:
            return "ok"
        if response.status_code in _RETRIED or response.status_code >= 500:
            return "retry"
        log.warning("push %s to %s answered %d: dropped", event_id, target.host, response.status_code)
        return "drop"
