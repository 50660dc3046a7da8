"""Durable work: a queue that delivers at least once, and a bucket where the first writer wins.

The contract the task protocol (``bus.durable``) stands on, with two implementations:
JetStream (``transports.jetstream_store``) and an in-memory twin with the same semantics
(:class:`MemoryDurable`, for unit tests and ``a2a.testing``).

Queue. :meth:`DurableStore.enqueue` stores a message on a subject once per ``msg_id`` (a
repeat within the duplicate window is dropped and reported); :meth:`DurableStore.take`
hands messages of one subject to one consumer, each to one taker at a time. A delivery
not acknowledged within the ack wait (extended by :meth:`Delivery.working`) is delivered
again, its ``attempt`` one higher; :meth:`Delivery.nak` gives it back at once (or after a
delay), :meth:`Delivery.term` drops it for good. A message whose ``ttl`` passes while it
waits is never delivered.

Bucket. :meth:`DurableStore.create` writes a key only if it does not exist (True when
this call wrote it); :meth:`DurableStore.put` overwrites; :meth:`DurableStore.get` reads.
:meth:`DurableStore.watch` tells when a key (or any key of a pattern) is written (then
read it: the notice itself may come from a writer that lost a ``create``).
"""

from __future__ import annotations

import abc
import itertools
import math
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field

import anyio

from ._match import subject_matches
from .errors import MessageTooLarge

__all__ = ["Delivery", "DurableStore", "MemoryDurable", "Notice", "checked_key"]


class Delivery(abc.ABC):
    """One delivery of a queued message to a taker."""

    subject: str
    """The subject the message was stored on."""
    data: bytes
    attempt: int
    """1 for the first delivery, one more for each redelivery."""
    ack_wait: float
    """Seconds it may go without :meth:`working` before it is delivered again."""
    sequence: int
    """Its place in the queue (1, 2, ... in the order messages were stored)."""

    @abc.abstractmethod
    async def ack(self) -> None:
        """Done with: never delivered again."""

    @abc.abstractmethod
    async def nak(self, delay: float = 0.0) -> None:
        """Give it back: delivered again after ``delay`` seconds."""

    @abc.abstractmethod
    async def working(self) -> None:
        """Still at it: the ack wait starts again."""

    @abc.abstractmethod
    async def term(self) -> None:
        """Never deliver it again (nor acknowledge it as done)."""


class DurableStore(abc.ABC):
    """A durable work queue and key-value bucket (see the module docstring)."""

    @abc.abstractmethod
    async def enqueue(self, subject: str, msg_id: str, data: bytes, *, ttl: float | None = None) -> int:
        """Store ``data`` for delivery on ``subject``; its place in the queue (its delivery's
        ``sequence``), or 0 when ``msg_id`` was stored already."""

    @abc.abstractmethod
    async def take(self, consumer: str, subject: str, *, max_items: int, timeout: float) -> list[Delivery]:
        """Up to ``max_items`` deliveries of ``subject`` for ``consumer``, waiting ``timeout`` at most."""

    async def stop_taking(self, consumer: str, subject: str) -> list[Delivery]:
        """Take no more for ``consumer``; what a :meth:`take` cut short had already been sent
        (to hand back at once, not after the ack wait). Nothing where a cut take sends nothing."""
        return []

    @abc.abstractmethod
    async def create(self, key: str, value: bytes) -> bool:
        """Write ``key`` only if it does not exist; True when this call wrote it."""

    @abc.abstractmethod
    async def put(self, key: str, value: bytes) -> None: ...

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Remove ``key`` (a later :meth:`create` of it succeeds)."""

    @abc.abstractmethod
    async def get(self, key: str) -> bytes | None:
        """The value of ``key``, or None when it does not exist."""

    async def listen(self, family: str) -> None:
        """Hear every stored write of ``family`` from now on (for :meth:`heard`); none by default."""
        return None

    def heard(self, key: str, family: str, after: int) -> tuple[bool, bytes | None]:
        """Whether every stored write of ``family`` has been heard since before the queue
        stored its message ``after`` (a sequence: the keys of a task are written after its
        message was queued), and the value last heard for ``key``: when the first is True
        and the second None, ``key`` was not written since. Clocks play no part."""
        return False, None

    @abc.abstractmethod
    async def keys(self, pattern: str) -> list[str]:
        """The keys that match ``pattern`` (``*`` for one token, ``>`` for the rest) and hold a value."""

    @abc.abstractmethod
    def watch(self, key: str, *, family: str | None = None) -> AbstractAsyncContextManager[Notice]:
        """A :class:`Notice` fired each time ``key`` is written, while the context lasts.

        ``key`` may hold wildcards (``*`` for one token, ``>`` for the rest). ``family`` is
        a wider pattern covering it that the store may listen to once for every watch of
        that family (default: every key with the same first token).
        """


class Notice:
    """Fired each time a watched key is written; :meth:`wait` returns after a write since
    the last wait returned (writes in between are one notice: read the key then).

    When the store can vouch for what it heard (a write it stored, not one it refused),
    :attr:`written` holds the values since the last wait, by key: a reader may use them
    instead of reading the store again.
    """

    def __init__(self) -> None:
        self._event: anyio.Event | None = None  # made when someone waits
        self._fired = False
        self.written: dict[str, bytes] = {}
        self.on_fire: Callable[[], object] | None = None
        """Called at each write, where the store hears it (it must not block)."""

    def fire(self, key: str | None = None, value: bytes | None = None) -> None:
        if key is not None and value is not None:
            self.written[key] = value
        if self._event is not None:
            self._event.set()
        else:
            self._fired = True
        if self.on_fire is not None:
            self.on_fire()

    async def wait(self) -> None:
        if self._fired:
            self._fired = False
            return
        event = self._event = anyio.Event()
        try:
            await event.wait()
        except BaseException:
            self._fired = event.is_set()  # a write heard as the wait was cancelled is kept
            raise
        finally:
            self._event = None

    def take(self, key: str) -> bytes | None:
        """The value last heard for ``key`` (and forget it), or None."""
        return self.written.pop(key, None)


@dataclass(eq=False)
class _Queued:
    subject: str
    data: bytes
    expires: float
    attempt: int = 0
    ready_at: float = 0.0
    """Deliverable from then on (the loop's clock)."""
    taken: bool = False
    seq: int = 0


@dataclass(eq=False)
class _MemoryDelivery(Delivery):
    store: MemoryDurable
    item: _Queued
    subject: str = ""
    data: bytes = b""
    attempt: int = 0
    ack_wait: float = 0.0
    sequence: int = 0
    settled: bool = field(default=False)

    async def ack(self) -> None:
        self._settle(None)

    async def nak(self, delay: float = 0.0) -> None:
        self._settle(delay)

    async def working(self) -> None:
        if not self.settled and self.item.attempt == self.attempt:
            self.item.ready_at = anyio.current_time() + self.store.ack_wait

    async def term(self) -> None:
        self._settle(None)

    def _settle(self, again_after: float | None) -> None:
        item = self.item
        if self.settled or item.attempt != self.attempt:
            return  # settled already, or redelivered since: this delivery no longer holds it
        self.settled = True
        if again_after is None:
            self.store.drop(item)
        else:
            item.taken = False
            item.ready_at = anyio.current_time() + again_after
            self.store.wake()


_KEY = re.compile(r"^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$")


def checked_key(key: str) -> str:
    """A key as both stores take it: a bucket's key rule, and no empty token (its subject
    would be invalid); raises ValueError for another."""
    if not _KEY.match(key):
        raise ValueError(f"invalid key {key[:80]!r}")
    return key


class MemoryDurable(DurableStore):
    """The in-memory twin: redelivery after ``ack_wait``, TTLs, first-writer-wins keys.

    Everything happens on the caller's event loop, with no task of its own: a delivery
    whose ack wait passed is found by the next :meth:`take`.
    """

    def __init__(self, *, ack_wait: float = 30.0, max_payload: int = 1024 * 1024) -> None:
        self.ack_wait = ack_wait
        self.max_payload = max_payload
        """Messages above this many bytes are refused, as a server's ``max_payload`` refuses them."""
        self._items: list[_Queued] = []
        self._ids: set[str] = set()
        self._kv: dict[str, bytes] = {}
        self._watchers: dict[str, list[Notice]] = {}
        self._seq = itertools.count(1)
        self._changed = anyio.Event()

    # -- queue ---------------------------------------------------------------------------

    async def enqueue(self, subject: str, msg_id: str, data: bytes, *, ttl: float | None = None) -> int:
        if len(data) > self.max_payload:
            raise MessageTooLarge(len(data), self.max_payload)
        if msg_id in self._ids:
            return 0
        self._ids.add(msg_id)
        expires = math.inf if ttl is None else anyio.current_time() + ttl
        item = _Queued(subject, data, expires, seq=next(self._seq))
        self._items.append(item)
        self.wake()
        return item.seq

    async def take(self, consumer: str, subject: str, *, max_items: int, timeout: float) -> list[Delivery]:
        with anyio.move_on_after(timeout):
            while True:
                found = self._ready(subject, max_items)
                if found:
                    return found
                changed = self._changed
                wait = self._next_ready(subject)
                with anyio.move_on_after(max(0.0, wait)):
                    await changed.wait()
        return []

    def _ready(self, subject: str, max_items: int) -> list[Delivery]:
        now = anyio.current_time()
        found: list[Delivery] = []
        for item in list(self._items):
            if len(found) >= max_items:
                break
            if not subject_matches(subject, item.subject):
                continue
            if item.expires <= now:
                self.drop(item)  # its time to live passed
                continue
            if item.ready_at > now:  # held by a taker whose ack wait runs, or given back for later
                continue
            item.taken = True
            item.attempt += 1
            item.ready_at = now + self.ack_wait  # delivered again after that unless settled
            found.append(
                _MemoryDelivery(self, item, item.subject, item.data, item.attempt, self.ack_wait, item.seq)
            )
        return found

    def _next_ready(self, subject: str) -> float:
        now = anyio.current_time()
        times = [i.ready_at - now for i in self._items if subject_matches(subject, i.subject)]
        return min(times, default=math.inf)

    def drop(self, item: _Queued) -> None:
        if item in self._items:
            self._items.remove(item)

    def wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    @property
    def queued(self) -> int:
        """Messages stored and not yet acknowledged or dropped."""
        return len(self._items)

    # -- bucket --------------------------------------------------------------------------

    async def create(self, key: str, value: bytes) -> bool:
        if checked_key(key) in self._kv:
            return False
        await self.put(key, value)
        return True

    async def put(self, key: str, value: bytes) -> None:
        if len(value) > self.max_payload:
            raise MessageTooLarge(len(value), self.max_payload)
        self._kv[checked_key(key)] = value
        for pattern, notices in self._watchers.items():
            if pattern == key or subject_matches(pattern, key):
                for notice in notices:
                    notice.fire(key, value)  # only stored writes get here: a lost create does not

    async def delete(self, key: str) -> None:
        self._kv.pop(checked_key(key), None)

    async def get(self, key: str) -> bytes | None:
        return self._kv.get(key)

    async def keys(self, pattern: str) -> list[str]:
        return [key for key in self._kv if subject_matches(pattern, key)]

    @asynccontextmanager
    async def watch(self, key: str, *, family: str | None = None) -> AsyncIterator[Notice]:
        notice = Notice()
        self._watchers.setdefault(key, []).append(notice)
        try:
            yield notice
        finally:
            watchers = self._watchers[key]
            watchers.remove(notice)
            if not watchers:
                del self._watchers[key]
