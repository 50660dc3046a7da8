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
import logging
import sys
from collections.abc import Coroutine
from typing import Any

__all__ = ["TaskSet"]

log = logging.getLogger("a2a.tasks")

_EAGER = sys.version_info >= (3, 12)


class TaskSet:
    """Tasks spawned for one owner; :meth:`aclose` cancels and awaits the ones still running."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` in a task of its own, with a fresh context (nothing leaks in from the spawner)."""
        if self.closed:
            coro.close()
            return
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        context = contextvars.Context()
        if _EAGER:
            task = asyncio.Task(coro, loop=loop, context=context, eager_start=True)  # type: ignore[call-arg,unused-ignore]
        else:
            task = loop.create_task(coro, context=context)
        if task.done():
            self._done(task)
            return
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task failed", exc_info=task.exception())

    async def aclose(self, timeout: float = 2.0) -> None:
        """Cancel every task still running and wait for them (``timeout`` seconds at most)."""
        self.closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
