"""One attempt at a durable task, as its handler sees it: checkpoints and journaled side effects.

``checkpoint(state)`` keeps the handler's progress (and the tokens the task spent so far); a
later attempt (after a crash or a shutdown) reads it back as ``last_checkpoint`` and resumes
from there, with the task's budget less what was spent. ``effect(name, fn)``
runs a side effect at most once per task: its start is recorded before ``fn`` runs and
its result after; a later attempt gets the recorded result without running it, and one
that finds a start without an end raises EFFECT_IN_DOUBT (it never runs it again), unless
the effect was declared ``idempotent``.
"""

from __future__ import annotations

import inspect
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import msgspec

from ..errors import A2AError, EffectInDoubt, InvalidParams, Unavailable
from .journal import Journal
from .keys import TaskKeys
from .store import TaskStore
from .wire import TASK_ID, Checkpoint, EffectRecord, QueuedTask, TaskEvent, now_ms

_TASK_ID = re.compile(TASK_ID)

__all__ = ["Attempt", "LocalAttempt"]

T = TypeVar("T")

log = logging.getLogger("a2a.tasks")

PROGRESS_BYTES = 16 * 1024
"""A progress update larger than this, encoded, is dropped (as a call's is)."""


class Attempt:
    """Attempt ``number`` of the task ``queued`` holds, with its checkpoints and effects in ``store``."""

    def __init__(
        self, store: TaskStore, queued: QueuedTask, number: int, keys: TaskKeys, journal: Journal
    ) -> None:
        self.store = store
        self.queued = queued
        self.number = number
        self.keys = keys
        self.journal = journal
        self.instance = ""
        self.sequence = 0
        """The task's place in the queue (its delivery's sequence)."""
        self.submitted = 0
        """Tasks this attempt's handler submitted so far (their order names their call sites)."""
        self.last_checkpoint: Any = None
        """What the last :meth:`checkpoint` of an earlier attempt (or this one) kept; None at first."""
        self.spent_before = 0
        """Tokens the task's earlier attempts had spent at their last checkpoint: this attempt's
        budget is what is left of the task's."""
        self.spent: Callable[[], int] = lambda: 0
        """Tokens this attempt has spent so far (its handler's usage, once it runs)."""
        self._running: set[str] = set()
        self._mark = secrets.token_hex(8)
        """Which attempt started an effect: its number is not enough, as a queue that lost
        its state (a server killed before writing it) delivers a task again as attempt 1."""
        self.store_failed = False
        """The store failed one of this attempt's writes (a checkpoint, an effect's record, a
        child's line): a failure of the attempt is then the store's, and it is run again."""

    @property
    def task_id(self) -> str | None:
        return self.queued.task_id

    async def checkpoint(self, state: Any) -> None:
        """Keep ``state`` (JSON-serialisable) for a later attempt to resume from.

        Raises:
            Unavailable: the store could not keep it.
        """
        with self._store_failures():
            await self.journal.flush()  # the attempt's start comes before anything it writes
            kept = Checkpoint(state=state, spent=self.spent_before + self.spent())
            await self.store.put(self.keys.checkpoint, kept)
        self.last_checkpoint = state

    async def checkpoint_of(self, task_id: str) -> Any:
        """The last checkpoint of another task of this agent that the same sender queued
        (the turn before this one, which ended waiting for input, say), or None.

        Raises:
            Unavailable: the store could not be read.
        """
        if not _TASK_ID.match(task_id):
            return None
        keys = TaskKeys(self.keys.agent, self.keys.sender, task_id)
        kept = await self.store.get(keys.checkpoint, Checkpoint)
        return None if kept is None else kept.state

    async def progress(self, update: Any) -> None:
        """Add the handler's ``update`` to the task's journal, where followers read it.
        Best effort, as a call's progress: an update that is not JSON or is over 16 KiB,
        or that the store cannot keep, is dropped and logged."""
        try:
            size = len(msgspec.json.encode(update))
        except (TypeError, ValueError, OverflowError) as exc:
            log.warning("task %s: progress update dropped: %s", self.task_id, exc)
            return
        if size > PROGRESS_BYTES:
            log.warning("task %s: progress update of %d bytes dropped", self.task_id, size)
            return
        event = TaskEvent(
            kind="progress", attempt=self.number, at=now_ms(), instance=self.instance, data=update
        )
        try:
            await self.journal.append(event)
        except A2AError as exc:
            log.warning("task %s: progress update not kept: %s", self.task_id, exc)

    async def child(self, task_id: str, agent: str) -> None:
        """Journal a task this attempt submitted, so cancelling this one cancels it too.

        Raises:
            Unavailable: the store could not keep it.
        """
        data = {"taskId": task_id, "agent": agent}
        with self._store_failures():
            await self.journal.append(TaskEvent(kind="child", attempt=self.number, at=now_ms(), data=data))

    async def effect(self, name: str, fn: Callable[[], Awaitable[T]], *, idempotent: bool = False) -> T:
        """Run the side effect ``name`` at most once for this task and return its result.

        ``fn`` is an async function, or a plain one (run in the event loop: keep it short).

        Raises:
            EffectInDoubt: an earlier attempt started it and recorded no end (unless ``idempotent``).
        """
        if name in self._running:
            raise InvalidParams(f"the side effect {name!r} is already running in this attempt")
        key = self.keys.effect(name)
        with self._store_failures():
            record = await self.store.get(key, EffectRecord)
        if record is not None:
            if record.done:
                return record.result  # type: ignore[no-any-return]
            if not idempotent and record.by != self._mark:
                raise EffectInDoubt(
                    f"the side effect {name!r} started in attempt {record.attempt} and never recorded "
                    "its end: it may or may not have happened, so it is not run again",
                    details={"effect": name, "attempt": record.attempt},
                )
        started = EffectRecord(attempt=self.number, by=self._mark)
        with self._store_failures():
            await self.journal.flush()  # the attempt's start comes before anything it writes
            if record is not None:
                await self.store.put(key, started)
            elif not await self.store.create(key, started):
                # Another attempt of the task (running at once: its keep-alive was late)
                # started it since the read: its record decides, it never runs twice.
                return await self.effect(name, fn, idempotent=idempotent)
        self._running.add(name)
        try:
            result = await _run(fn)
        finally:
            self._running.discard(name)
        with self._store_failures():
            await self.store.put(
                key, EffectRecord(attempt=self.number, done=True, result=result, by=self._mark)
            )
        return result

    @contextmanager
    def _store_failures(self) -> Iterator[None]:
        """A store failure here is the store's, not the task's: the attempt is run again."""
        try:
            yield
        except Unavailable:
            self.store_failed = True
            raise


class LocalAttempt:
    """What a handler serving a plain call gets instead: one attempt, kept in memory."""

    task_id: str | None = None
    number = 1

    def __init__(self) -> None:
        self.last_checkpoint: Any = None
        self.submitted = 0

    async def checkpoint(self, state: Any) -> None:
        self.last_checkpoint = state

    async def checkpoint_of(self, task_id: str) -> Any:
        """A plain call reads no task's checkpoints."""
        return None

    async def progress(self, update: Any) -> None:
        """A plain call's progress goes to its caller (:meth:`a2a.Context.progress`), not here."""

    async def child(self, task_id: str, agent: str) -> None:
        """A plain call's child tasks outlive it: nothing cancels them with it."""

    async def effect(self, name: str, fn: Callable[[], Awaitable[T]], *, idempotent: bool = False) -> T:
        return await _run(fn)


async def _run(fn: Callable[[], Awaitable[T]]) -> T:
    """``fn()``'s result, awaited when it is awaitable (a plain function is run as it is)."""
    result: Any = fn()
    if inspect.isawaitable(result):
        return await result  # type: ignore[no-any-return]
    return result  # type: ignore[no-any-return]
