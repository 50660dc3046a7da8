"""What the console and ``a2a watch`` show live: calls (audit records), sessions, the registry.

One :class:`Feed` per process subscribes once to the audit records and the session
events and hands each to every listener through a bounded queue; a listener too slow to
keep up loses events (counted), never slows the others down.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from bus.errors import Unavailable
from discovery.profile import AgentProfile
from transports import Message

from ..core.runtime import Runtime
from ..sessions.model import Session
from ..sessions.store import SessionStore
from ..stores.audit import AuditRecord, decode_records

__all__ = ["Event", "Feed", "agent_row", "call_row", "session_row"]

log = logging.getLogger("a2a.console")
KEEP_CALLS = 2000
QUEUE = 256
REGISTRY_EVERY = 2.0  # seconds between registry snapshots


@dataclass(frozen=True, slots=True)
class Event:
    """``kind`` is ``call`` (an AuditRecord), ``session`` (a Session) or ``agents`` (a list)."""

    kind: str
    data: Any
    user: str | None = None
    """Whose it is (None: everybody's, the registry)."""


class Feed:
    def __init__(self, runtime: Runtime, store: SessionStore) -> None:
        self.runtime = runtime
        self.store = store
        self.calls: deque[AuditRecord] = deque(maxlen=KEEP_CALLS)
        self.agents: list[AgentProfile] = []
        self.dropped = 0
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

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow calls, sessions and the registry until cancelled."""

        async def on_record(msg: Message) -> None:
            for record in decode_records(msg.data, msg.subject):
                self.calls.append(record)
                self._publish(Event("call", record, record.user_id))

        subscription = await self.runtime.subscribe_audit(on_record) if self.runtime.audit.enabled else None
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self._follow_sessions)
                await tg.start(self._follow_registry)
                task_status.started()
        finally:
            if subscription is not None:
                with anyio.CancelScope(shield=True):
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
                        self._publish(Event("session", event.session, event.session.user_id))
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
            except Unavailable as exc:
                log.warning("registry: %s", exc)
            else:
                rows = [agent_row(p) for p in sorted(agents, key=lambda p: (p.name, p.agent_id))]
                if rows != last:
                    last = rows
                    self.agents = agents
                    self._publish(Event("agents", rows))
            await anyio.sleep(REGISTRY_EVERY)


def agent_row(p: AgentProfile) -> dict[str, Any]:
    return {
        "name": p.name,
        "instance": p.agent_id,
        "capabilities": [c.id for c in p.capabilities],
        "status": p.status,
        "load": p.load,
        "capacity": p.capacity,
        "trust": 1.0 if p.trust is None else p.trust,
        "lastSeenSecondsAgo": round(max(0.0, time.time() - p.last_seen / 1000), 1),
    }


def call_row(r: AuditRecord) -> dict[str, Any]:
    return _whole(r)  # type: ignore[no-any-return]


def session_row(s: Session) -> dict[str, Any]:
    return _whole(s)  # type: ignore[no-any-return]


def _whole(value: Any) -> Any:
    """JSON-ready builtins with every field present (the wire form leaves defaults out, a page
    should not have to know them)."""
    if isinstance(value, msgspec.Struct):
        names = zip(value.__struct_fields__, value.__struct_encode_fields__, strict=True)
        return {wire: _whole(getattr(value, name)) for name, wire in names}
    if isinstance(value, list | tuple):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    return msgspec.to_builtins(value)
