"""Short-lived tasks with an owner: one per handled message, one per delayed resend.

This is the one place that creates raw asyncio tasks, and says why: anyio's
``TaskGroup.start_soon`` costs about 30 µs a task on Python 3.11, several times the client
work of a whole NATS round trip, and a handled message needs its task for a few
microseconds. A ``TaskSet`` keeps its tasks, logs what they raise, and cancels and awaits
whatever is left when its owner closes it, so no task outlives its owner. On Python 3.12+
tasks start eagerly: a handler that never waits finishes, reply included, without being
scheduled at all.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["TaskSet", "loop_clock"]

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
