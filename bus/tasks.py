"""Tasks with an owner: reusable workers for handled messages, short-lived tasks for the rest.

This is the one place that creates raw asyncio tasks, and says why: anyio's
``TaskGroup.start_soon`` costs about 30 µs a task on Python 3.11, several times the client
work of a whole NATS round trip. A ``TaskSet`` keeps its tasks, logs what they raise, and
cancels and awaits whatever is left when its owner closes it, so no task outlives its
owner. On Python 3.12+ tasks start eagerly: a task that never waits finishes without
being scheduled at all.

Handled messages do not get a task each: :class:`Workers` runs them on a few reusable
tasks (see there for why, and for how each handling still starts from a clean slate).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

__all__ = ["BURST", "TaskSet", "Workers", "loop_clock"]

log = logging.getLogger("a2a.bus")

T = TypeVar("T")

BURST = 32
"""Items a worker handles in a row before it hands the event loop back (see :class:`Workers`)."""

_EAGER = sys.version_info >= (3, 12)


def loop_clock(loop: asyncio.AbstractEventLoop) -> Callable[[], float]:
    """The event loop's clock, as a function that is cheap to call many times per message.

    The standard loop's ``time()`` is a Python method around ``time.monotonic``; return
    that function itself when the loop does just that (uvloop keeps a clock of its own).
    """
    return time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time


class TaskSet:
    """Tasks spawned for one owner; :meth:`aclose` cancels and awaits the ones still running.

    Finished tasks are dropped in batches (whenever the list has doubled) rather than by a
    done callback each: a done callback costs one more trip through the event loop per
    task, and keeping many finished tasks around makes the garbage collector work harder.
    A task that fails is reported by asyncio's own handler for exceptions nobody retrieved.
    """

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[Any]] = []
        self._prune_at = 64
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def __len__(self) -> int:
        """Tasks still running."""
        return sum(1 for task in self._tasks if not task.done())

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` in a task of its own, with a fresh context (nothing leaks in from the spawner)."""
        if self.closed:
            coro.close()
            return
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        if _EAGER:
            task = asyncio.Task(coro, loop=loop, context=contextvars.Context(), eager_start=True)  # type: ignore[call-arg,unused-ignore]
            if task.done():
                return
        else:
            task = loop.create_task(coro, context=contextvars.Context())
        tasks = self._tasks
        tasks.append(task)
        if len(tasks) >= self._prune_at:
            self._tasks = tasks = [t for t in tasks if not t.done()]
            self._prune_at = max(64, 2 * len(tasks))

    async def aclose(self, timeout: float = 2.0) -> None:
        """Cancel every task still running and wait for them (``timeout`` seconds at most)."""
        self.closed = True
        tasks = [task for task in self._tasks if not task.done()]
        self._tasks = []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)


class Workers(Generic[T]):
    """Runs ``handle(item)`` for each submitted item, in arrival order, on a few reusable tasks.

    A task per item costs more on Python 3.11 than handling a short request does (creating
    and scheduling a task is about 1.7 µs of a callee's 10): a worker takes queued items
    one after the other, and a burst of items costs one task, not one per item. No item
    waits behind a handling that waits: when every worker is inside ``handle`` with items
    queued at the next turn of the event loop, another worker starts (and at once, when
    an item arrives while every worker is inside ``handle``). Idle workers beyond the
    first end.

    Every handling still starts from a clean slate, as in a task of its own: workers run
    in an empty ``contextvars`` context, and a worker whose handling left a context
    variable set, or a cancellation request pending, ends after that item instead of
    taking the next. A handling is cancelled by cancelling the task it runs in
    (``asyncio.current_task()`` inside ``handle``), as before.

    After ``burst`` items in a row a worker yields to the event loop once. The replies of
    a burst of requests then leave in groups, as they are ready, instead of all after the
    last one: their callers work on the first group while the rest is handled, and the
    loop's I/O and timers run at least every ``burst`` items. With 64 calls in flight
    between two processes this keeps both busy, where one reply write per burst made
    them take turns.
    """

    def __init__(
        self, handle: Callable[[T], Awaitable[object]], tasks: TaskSet, *, burst: int = BURST
    ) -> None:
        self._handle = handle
        self._tasks = tasks
        self._burst = burst
        self._queue: deque[T] = deque()
        self._idle: list[asyncio.Future[None]] = []
        self._free = 0
        """Workers not inside ``handle``: waiting for items, about to run, or pausing."""
        self._checking = False

    def __len__(self) -> int:
        """Items submitted and not taken by a worker yet."""
        return len(self._queue)

    def submit(self, item: T) -> None:
        """Queue ``item``; a free worker takes it, or a new one starts. Never waits."""
        self._queue.append(item)
        idle = self._idle
        while idle:
            waiter = idle.pop()
            if not waiter.done():
                waiter.set_result(None)
                return
        if not self._free:
            self._start()

    def _check_next_turn(self) -> None:
        """With items queued and no free worker, look again at the next turn (once per turn)."""
        if self._queue and not self._free and not self._checking:
            self._checking = True
            asyncio.get_running_loop().call_soon(self._check)

    def _check(self) -> None:
        self._checking = False
        if self._queue and not self._free:
            self._start()  # every worker is in a handling that waits: the items behind it get one

    def _start(self) -> None:
        if self._tasks.closed:
            return
        self._free += 1
        try:
            self._tasks.spawn(self._work())
        except BaseException:
            self._free -= 1
            raise

    async def _work(self) -> None:
        queue = self._queue
        handle = self._handle
        burst = self._burst
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        in_a_row = 0
        try:
            while True:
                if not queue:
                    if self._free > 1:
                        return  # another worker is free: one waiting is enough
                    waiter = loop.create_future()
                    self._idle.append(waiter)
                    try:
                        await waiter
                    finally:
                        if not waiter.done():
                            self._idle.remove(waiter)
                    in_a_row = 0
                    continue
                item = queue.popleft()
                self._free -= 1
                self._check_next_turn()  # is this handling then waiting, with items queued?
                try:
                    await handle(item)
                except Exception:  # a bug in ``handle``: report it, keep serving
                    log.exception("handling a message failed")
                finally:
                    self._free += 1
                if task.cancelling() or len(contextvars.copy_context()):
                    return  # this handling left state behind: the next item gets a fresh worker
                in_a_row += 1
                if in_a_row == burst:
                    in_a_row = 0
                    await asyncio.sleep(0)
        finally:
            self._free -= 1
            # Items may wait and this was the last free worker: a new one starts next turn,
            # not from here (on 3.12 a task starts eagerly, on this very stack, and a run of
            # workers that each handle one item and end would grow it).
            self._check_next_turn()
