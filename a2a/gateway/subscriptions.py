"""``SubscribeToTask`` streams open on this replica, counted per task and per user, and capped.

Each stream holds an HTTP connection, a buffer of events and, for a task running on another
replica, a Redis connection: without a cap one client could open thousands on one task. A
stream over a cap is refused with ``UnsupportedOperationError`` (``-32004``, HTTP 400,
``FAILED_PRECONDITION``), the A2A error for an aspect of an operation this server does not
allow; its ErrorInfo says which limit (``subscriptionsPerTask``, ``subscriptionsPerUser``,
``streamsElsewhere``) and its value.

A stream is counted from the moment it is granted and given back when it ends, or when its
response is dropped before it began (so a client that goes away at once frees its place).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable

from transports.a2a_http import A2AProtocolError, StreamResponse
from transports.a2a_http import errors as e

from .tasks import Numbered

__all__ = ["Events", "Subscriptions"]

Events = AsyncIterator[StreamResponse | Numbered | None]
"""A stream's events (numbered when the task's log keeps them); ``None`` is a keep-alive."""


class Subscriptions:
    """The streams this replica serves, under ``per_task``, ``per_user`` and ``elsewhere`` caps."""

    def __init__(self, *, per_task: int, per_user: int, elsewhere: int) -> None:
        self.per_task = per_task
        self.per_user = per_user
        self.max_elsewhere = elsewhere
        self.tasks: Counter[str] = Counter()
        self.users: Counter[str] = Counter()
        self.elsewhere = 0
        """Streams of tasks running on other replicas (each holds a Redis connection)."""

    def open(self, user: str, task_id: str, events: Events, *, elsewhere: bool) -> Events:
        """``events`` counted as one of ``user``'s streams of ``task_id`` while they last.

        ``events`` must not hold anything before it is first iterated (it may never be).

        Raises:
            A2AProtocolError: UNSUPPORTED_OPERATION, over one of the caps.
        """
        if self.tasks[task_id] >= self.per_task:
            raise _over(
                "subscriptionsPerTask", self.per_task, f"task {task_id} has {self.per_task} streams open"
            )
        if self.users[user] >= self.per_user:
            raise _over("subscriptionsPerUser", self.per_user, f"you have {self.per_user} streams open")
        if elsewhere and self.elsewhere >= self.max_elsewhere:
            raise _over(
                "streamsElsewhere",
                self.max_elsewhere,
                "too many streams of tasks on other replicas: poll GetTask instead",
            )
        self.tasks[task_id] += 1
        self.users[user] += 1
        self.elsewhere += elsewhere
        anchor = _Anchor()  # held by the stream's frame: dropped with it, begun or not
        release = weakref.finalize(anchor, self._release, user, task_id, elsewhere)
        release.atexit = False
        return _counted(events, release, anchor)

    def _release(self, user: str, task_id: str, elsewhere: bool) -> None:
        for counts, key in ((self.tasks, task_id), (self.users, user)):
            counts[key] -= 1
            if counts[key] <= 0:
                del counts[key]
        self.elsewhere -= elsewhere


class _Anchor:
    """An object whose end gives a stream's place back, should the stream never end by itself."""


def _over(limit: str, most: int, what: str) -> A2AProtocolError:
    return A2AProtocolError(
        e.UNSUPPORTED_OPERATION,
        f"{what}, the most allowed: close one first",
        data={"limit": limit, "max": str(most)},
    )


async def _counted(events: Events, release: Callable[[], object], anchor: _Anchor) -> Events:
    try:
        async for event in events:
            yield event
    finally:
        release()  # a finalizer runs once: here, or when ``anchor`` goes with a stream never begun
