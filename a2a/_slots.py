"""Concurrency slots of an agent instance: a semaphore whose holders can lend their slot."""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Slots"]


class Slots:
    """At most ``capacity`` holders at once; others wait in arrival order.

    Taking a free slot does not yield to the event loop, which keeps the common path of
    every request cheap. A holder that awaits another agent releases its slot and takes
    one again afterwards (see ``Context.call``).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def full(self) -> bool:
        return self.used >= self.capacity

    async def acquire(self) -> None:
        if self.used < self.capacity and not self._waiters:
            self.used += 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        except BaseException:
            if future.done() and not future.cancelled():
                self.release()  # a slot was handed over just as we were cancelled: pass it on
            else:
                self._waiters.remove(future)
            raise

    def release(self) -> None:
        while self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)  # the slot passes straight to the next waiter
                return
        self.used -= 1
