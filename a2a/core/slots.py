"""Concurrency slots of an agent instance: a semaphore whose holders can lend their slot."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

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

    async def acquire(self) -> None:
        if self.used < self.capacity and not self._waiters:
            self.used += 1
            if self.used >= self.capacity:
                self._changed()
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


class Lease:
    """One handler's hold on a slot, which it lends out while it waits on another agent.

    A handler waiting for a call it made releases its slot, so agents calling each other
    never starve one another; it takes a slot again before it goes on.
    """

    __slots__ = ("held", "slots")

    def __init__(self, slots: Slots) -> None:
        self.slots = slots
        self.held = False

    async def take(self) -> None:
        await self.slots.acquire()
        self.held = True

    def give_up(self) -> bool:
        """Release the slot if this lease holds it; True when it did."""
        if not self.held:
            return False
        self.held = False
        self.slots.release()
        return True
