"""A task's journal: its events numbered 1, 2, ... in the store, appended by each attempt, followed by anyone.

The runner of an attempt appends (:class:`Journal`): the attempt's start, its handler's
progress, a hand-back. Each event is created under the next free number (the first
writer wins), so two attempts writing at once (one of them cut off from the store, say)
interleave and never overwrite each other; numbers have no gaps, so a later attempt finds
the end of the journal in a few reads (:func:`first_free`). Followers (:func:`follow`)
read from a cursor on, are woken by each write, and stop after the task's outcome.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import msgspec

from ..errors import A2AError
from .keys import TaskKeys, events_of, outcomes_of
from .store import TaskStore, decode
from .wire import TaskEvent, TaskOutcome

__all__ = ["Journal", "first_free", "follow", "read_all"]

log = logging.getLogger("a2a.tasks")

RECHECK = 5.0
"""Seconds a follower goes without a notice before it reads again anyway."""


async def first_free(store: TaskStore, keys: TaskKeys) -> int:
    """The first number with no event: doubling reads, then halving (the journal has no gaps)."""
    high = 1  # a number is taken by whatever is stored there, readable or not
    while await store.raw.get(keys.event(high)) is not None:
        high *= 2
    low = high // 2  # 0 or a number that is taken
    while high - low > 1:
        mid = (low + high) // 2
        if await store.raw.get(keys.event(mid)) is not None:
            low = mid
        else:
            high = mid
    return high


class Journal:
    """The appending end of one task's journal, for one attempt (``start``: the first number
    to try; 1 for a first attempt, found with :func:`first_free` for a later one)."""

    def __init__(self, store: TaskStore, keys: TaskKeys, start: int) -> None:
        self.store = store
        self.keys = keys
        self.next = start
        self.pending: TaskEvent | None = None
        """An event to store before the next one (or at :meth:`flush`): an attempt's start,
        kept back so that a short attempt costs no write for it."""

    async def flush(self) -> None:
        """Store the pending event, if any.

        Raises:
            Unavailable: the store could not keep it.
        """
        if self.pending is not None:
            event, self.pending = self.pending, None
            await self._store(event)

    async def append(self, event: TaskEvent) -> int:
        """Store ``event`` under the next free number (after the pending one) and return it.

        Raises:
            Unavailable: the store could not keep it.
        """
        await self.flush()
        return await self._store(event)

    async def _store(self, event: TaskEvent) -> int:
        while not await self.store.create(self.keys.event(self.next), event):
            self.next = await first_free(self.store, self.keys)  # another attempt wrote there
        self.next += 1
        return self.next - 1


async def read_all(store: TaskStore, keys: TaskKeys) -> list[TaskEvent]:
    """Every event of the journal, in order."""
    events: list[TaskEvent] = []
    while (event := await store.get(keys.event(len(events) + 1), TaskEvent)) is not None:
        event.n = len(events) + 1
        events.append(event)
    return events


async def follow(
    store: TaskStore,
    keys: TaskKeys,
    after: int,
    at_deadline: Callable[[], Awaitable[TaskOutcome | None]],
) -> AsyncIterator[TaskEvent]:
    """The task's events after number ``after``, as they are written, then one ``ended``
    event with its state (its ``data`` the outcome's result or error).

    ``at_deadline`` is awaited whenever a wait ends with nothing new; it returns the
    task's outcome once its deadline has passed (ending it there if nobody did), else None.
    """
    n = after
    async with (
        store.watch(keys.event(n + 1).rsplit(".", 1)[0] + ".*", family=events_of(keys.sender)) as written,
        store.watch(keys.outcome, family=outcomes_of(keys.sender)) as ended,
    ):
        woken = False
        while True:
            heard = written.take(keys.event(n + 1))  # stored values the store vouches for
            event = decode(heard, TaskEvent) if heard is not None else None
            if event is None:
                event = await _read_event(store, keys, n + 1, retry=woken)
            if event is not None:
                n = event.n = n + 1
                yield event
                woken = False
                continue
            outcome = await store.get(keys.outcome, TaskOutcome)
            if outcome is None and not woken:
                outcome = await at_deadline()
            if outcome is not None:
                # Events written before the outcome are read first; a zombie's later ones are not.
                while (event := await _read_event(store, keys, n + 1, retry=False)) is not None:
                    n = event.n = n + 1
                    yield event
                yield _ended(outcome, n + 1)
                return
            woken = await _either(written.wait, ended.wait, RECHECK)


def _ended(outcome: TaskOutcome, n: int) -> TaskEvent:
    error = msgspec.to_builtins(outcome.error) if outcome.error is not None else None
    data = outcome.result if outcome.state == "completed" else error
    return TaskEvent(
        kind="ended",
        attempt=outcome.attempt,
        at=outcome.finished_at,
        instance=outcome.instance,
        data=data,
        n=n,
        state=outcome.state,
    )


async def _read_event(store: TaskStore, keys: TaskKeys, n: int, *, retry: bool) -> TaskEvent | None:
    """Event ``n``. After a notice the write may be a moment ahead of reads: a miss is read
    again a few times, briefly."""
    for pause in (0.0, 0.001, 0.005, 0.02) if retry else (0.0,):
        await anyio.sleep(pause)
        try:
            event = await store.get(keys.event(n), TaskEvent)
        except A2AError as exc:  # the store is away: the follower waits and reads again
            log.debug("reading a task's journal failed: %s", exc)
            return None
        if event is not None:
            return event
    return None


async def _either(
    first: Callable[[], Awaitable[None]], second: Callable[[], Awaitable[None]], limit: float
) -> bool:
    """Wait for whichever comes first, ``limit`` seconds at most; True when one came."""
    came = False

    async def wait(one: Callable[[], Awaitable[None]], scope: anyio.CancelScope) -> None:
        nonlocal came
        await one()
        came = True
        scope.cancel()

    with anyio.move_on_after(limit):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, first, tg.cancel_scope)
            tg.start_soon(wait, second, tg.cancel_scope)
    return came
