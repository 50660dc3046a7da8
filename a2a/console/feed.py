"""What the console and ``a2a watch`` show live: calls (audit records), sessions, the registry.

One :class:`Feed` per process subscribes once to the audit records, the records of calls
still running and the session events, and hands each to every listener through a bounded
queue; a listener too slow to keep up loses events (counted), never slows the others down.

A call appears as it runs: a call still running after half a second is announced once
(a record with the outcome ``running``, see :mod:`a2a.core.running`), and its final record,
with the same request id, replaces it when it ends. Quicker calls appear when they end.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from bus.errors import Unavailable
from discovery import Registry
from discovery.profile import AgentProfile
from transports import Message

from ..core.runtime import Runtime
from ..sessions.store import SessionStore
from ..stores.audit import AuditRecord, decode_records
from .history import recent_calls
from .rows import agent_row

__all__ = ["Event", "Feed"]

log = logging.getLogger("a2a.console")
KEEP_CALLS = 2000
QUEUE = 256
REGISTRY_EVERY = 2.0  # seconds between registry snapshots
RUNNING_FOR = 3600.0
"""Seconds a call announced as running is shown without its end (its process may be gone)."""
LOST_AFTER = 2 * REGISTRY_EVERY
"""Seconds a call must have run before the absence of its instance from the registry ends
it as lost (an instance that has just registered may not be in the latest snapshot yet)."""


@dataclass(frozen=True, slots=True)
class Event:
    """``kind`` is ``call`` (an AuditRecord: an ended call, or one still ``running``),
    ``session`` (a Session) or ``agents`` (a list of rows)."""

    kind: str
    data: Any
    user: str | None = None
    """Whose it is (None: everybody's, the registry)."""


class Feed:
    def __init__(self, runtime: Runtime, store: SessionStore) -> None:
        self.runtime = runtime
        self.store = store
        self.calls: deque[AuditRecord] = deque(maxlen=KEEP_CALLS)
        """Calls that ended, in the order their records arrived."""
        self.running: OrderedDict[str, AuditRecord] = OrderedDict()
        """Calls announced as running whose end has not arrived, by request id."""
        self.agents: list[AgentProfile] = []
        self.dropped = 0
        self._ended: OrderedDict[str, None] = OrderedDict()
        """Request ids of the calls that ended lately (a running record after its end is late)."""
        self._listeners: set[MemoryObjectSendStream[Event]] = set()

    @contextmanager
    def listen(self) -> Iterator[MemoryObjectReceiveStream[Event]]:
        send, receive = anyio.create_memory_object_stream[Event](QUEUE)
        self._listeners.add(send)
        try:
            yield receive
        finally:
            self._listeners.discard(send)
            send.close()
            receive.close()

    def still_running(self) -> list[AuditRecord]:
        """The calls running now, oldest announcement first (those shown too long are let go)."""
        horizon = (time.time() - RUNNING_FOR) * 1000
        for key in [k for k, r in self.running.items() if r.started_at < horizon]:
            del self.running[key]
        return list(self.running.values())

    async def _lose_calls_of_gone(self, registry: Registry, listed: set[str]) -> None:
        """End the running calls of instances gone from the registry as ``AGENT_LOST``: the
        process that would have written their end is gone (and when their caller is too, no
        record of them will ever come). An instance missing from the listing is looked up on
        its own before its calls are let go."""
        now = time.time() * 1000
        missing = {
            r.instance
            for r in self.running.values()
            if r.instance is not None and r.instance not in listed and now - r.started_at >= LOST_AFTER * 1000
        }
        for instance in missing:
            if await registry.get(instance) is not None:
                continue
            for key, r in [(k, r) for k, r in self.running.items() if r.instance == instance]:
                lost = msgspec.structs.replace(
                    r,
                    outcome="error",
                    error_code="AGENT_LOST",
                    error_message=f"{instance} left the registry before the call's end was recorded",
                    error_agent=r.target,
                    duration_ms=now - r.started_at,
                )
                self._ended_call(key)
                self.calls.append(lost)
                self._publish(Event("call", lost, lost.user_id))

    def _publish(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener.send_nowait(event)
            except anyio.WouldBlock:
                self.dropped += 1
                if self.dropped % 100 == 1:
                    log.warning("a console listener is too slow: %d events dropped so far", self.dropped)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._listeners.discard(listener)

    def _ended_call(self, request_id: str) -> None:
        self.running.pop(request_id, None)
        self._ended[request_id] = None
        while len(self._ended) > 2 * KEEP_CALLS:
            self._ended.popitem(last=False)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow calls, sessions and the registry until cancelled."""

        async def on_record(msg: Message) -> None:
            for record in decode_records(msg.data, msg.subject):
                self._ended_call(record.request_id)
                self.calls.append(record)
                self._publish(Event("call", record, record.user_id))

        async def on_running(msg: Message) -> None:
            for record in decode_records(msg.data, msg.subject):
                if record.outcome != "running" or record.request_id in self._ended:
                    continue  # its end came first
                self.running[record.request_id] = record
                while len(self.running) > KEEP_CALLS:
                    self.running.popitem(last=False)
                self._publish(Event("call", record, record.user_id))

        subscriptions = []
        if self.runtime.audit.enabled:
            link = self.runtime.bus.link
            subscriptions.append(await self.runtime.subscribe_audit(on_record))
            subscriptions.append(await link.subscribe(self.runtime.bus.subjects.running_all, on_running))
            past = await recent_calls(link.transport, self.runtime.settings.namespace, KEEP_CALLS)
            past = [r for r in past if r.request_id not in self._ended]  # not those that came live
            for record in past:
                self._ended_call(record.request_id)
            self.calls = deque([*past, *self.calls][-KEEP_CALLS:], maxlen=KEEP_CALLS)
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self._follow_sessions)
                await tg.start(self._follow_registry)
                task_status.started()
        finally:
            with anyio.CancelScope(shield=True):
                for subscription in subscriptions:
                    await subscription.unsubscribe()

    async def _follow_sessions(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        while True:
            try:
                async with self.store.events() as events:
                    if not started:
                        started = True
                        task_status.started()
                    async for event in events:
                        s = event.session
                        self._publish(Event("session", s, s.user_id))
            except Unavailable as exc:
                log.warning("session events: %s; following again in 1 s", exc)
                if not started:
                    started = True
                    task_status.started()
                await anyio.sleep(1.0)

    async def _follow_registry(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        registry = self.runtime.registry
        task_status.started()
        if registry is None:
            return
        last: Any = None
        while True:
            try:
                agents = await registry.list_agents()
                await self._lose_calls_of_gone(registry, {p.agent_id for p in agents})
            except Unavailable as exc:
                log.warning("registry: %s", exc)
            else:
                rows = [agent_row(p) for p in sorted(agents, key=lambda p: (p.name, p.agent_id))]
                if rows != last:
                    last = rows
                    self.agents = agents
                    self._publish(Event("agents", rows))
            await anyio.sleep(REGISTRY_EVERY)
