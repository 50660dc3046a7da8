"""Concurrency slots of an agent instance: a semaphore whose holders can lend their slot."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any

from bus.callee import Held
from bus.wire import Envelope

__all__ = ["Lease", "Slots"]


class Slots:
    """At most ``capacity`` holders at once; others wait in arrival order.

    Taking a free slot does not yield to the event loop, which keeps the common path of
    every request cheap. ``on_change(busy)`` is called whenever the instance becomes busy
    (every slot taken, or someone waiting) or stops being busy.
    """

    def __init__(self, capacity: int, on_change: Callable[[bool], None] | None = None) -> None:
        self.capacity = capacity
        self.used = 0
        self.busy = False
        self._on_change = on_change
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def full(self) -> bool:
        return self.used >= self.capacity

    def _changed(self) -> None:
        busy = self.used >= self.capacity or bool(self._waiters)
        if busy is not self.busy:
            self.busy = busy
            if self._on_change is not None:
                self._on_change(busy)

    def try_acquire(self) -> bool:
        """Take a free slot if there is one, without waiting."""
        if self.used < self.capacity and not self._waiters:
            self.used += 1
            if self.used >= self.capacity:
                self._changed()
            return True
        return False

    async def acquire(self) -> None:
        if self.try_acquire():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._changed()
        try:
            await future
        except BaseException:
            if future.done() and not future.cancelled():
                self.release()  # a slot was handed over just as we were cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):  # release() may have passed it over already
                    self._waiters.remove(future)
                self._changed()
            raise
        self._changed()

    def release(self) -> None:
        while self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)  # the slot passes straight to the next waiter
                return
        self.used -= 1
        if self.busy:
            self._changed()


class Lease(Held):
    """A call this instance holds: its slot, which the handler lends out while it waits on
    another agent (so agents calling each other never starve one another), and what the
    endpoint needs to acknowledge and stop it (see :class:`bus.Held`).

    One object per request serves both, as it is made for every message.
    """

    __slots__ = ("has_slot", "request", "slots")

    def __init__(
        self,
        slots: Slots,
        task: asyncio.Task[Any],
        reply: str,
        started: float,
        deadline: float,
        sender: str,
        request: Envelope | None = None,
    ) -> None:
        super().__init__(task, reply, started, deadline, sender)
        self.slots = slots
        self.has_slot = False
        self.request = request
        """The request, for a record of the call while it runs (:mod:`a2a.core.running`)."""

    async def take(self) -> None:
        if not self.slots.try_acquire():
            await self.slots.acquire()
        self.has_slot = True

    def take_nowait(self) -> bool:
        """Take a free slot without waiting; False when the handler has to wait (:meth:`take`)."""
        self.has_slot = self.slots.try_acquire()
        return self.has_slot

    def give_up(self) -> bool:
        """Release the slot if this lease holds it; True when it did."""
        if not self.has_slot:
            return False
        self.has_slot = False
        self.slots.release()
        return True
