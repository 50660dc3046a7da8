"""The caller half of durable tasks: accept a task once, wait for its outcome, cancel it."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator

import anyio

from ..errors import (
    A2AError,
    Cancelled,
    DeadlineExceeded,
    InvalidEnvelope,
    InvalidParams,
    PermissionDenied,
    Unavailable,
)
from ..subjects import Subjects, validate_name
from ..wire import RequestEnvelope
from . import keys
from .journal import follow
from .keys import TaskKeys
from .store import TaskStore, decode
from .wire import TASK_ID, QueuedTask, TaskEvent, TaskOutcome, TaskRecord, now_ms

__all__ = ["TaskClient"]

log = logging.getLogger("a2a.tasks")

_TASK_ID = re.compile(TASK_ID)

RECHECK = 5.0
"""Seconds a waiter goes without a notice before it reads the outcome again anyway."""

REQUEUE_WITHIN = 60.0
"""Seconds after its submission a task found by its key may be queued again: well inside
the queue's duplicate window (120 s), so a copy of a message that is there is dropped."""


class TaskClient:
    """Submits durable tasks of one namespace as the runtime ``subjects`` name, and follows them."""

    def __init__(self, store: TaskStore, subjects: Subjects) -> None:
        self.store = store
        self.subjects = subjects

    async def submit(
        self,
        request: RequestEnvelope,
        agent: str,
        *,
        key: str | None,
        max_attempts: int,
        trace: dict[str, str] | None = None,
    ) -> tuple[TaskRecord, bool, int]:
        """Accept ``request`` as a task for ``agent``; its correlation id is the task id.

        Returns the task's record, True and its place in the queue, or, when ``key`` names a task its owner
        submitted already, that task's record, False and 0 (queued again only while it may
        never have been: see :meth:`_queue_again`). After UNAVAILABLE the key stays: a
        retry with it finishes the same task, however far the failed try got.

        Raises:
            Unavailable: the store could not take it.
        """
        store = self.store
        task_id = request.metadata.correlation_id
        if not _TASK_ID.match(task_id):
            raise InvalidParams(
                "a task id has 1 to 64 letters, digits, '_' or '-'", details={"field": "taskId"}
            )
        owner = request.user_id
        validate_name("agent name", agent)  # ValueError before anything is written
        sender = self.subjects.sender
        idempotency = keys.idempotency(sender, owner, key) if key is not None else None
        adopted = False
        if idempotency is not None and not await store.create(idempotency, task_id):
            existing = await store.get(idempotency, str)
            if not existing or not _TASK_ID.match(existing):
                raise Unavailable("the task this key names is being submitted: try again in a moment")
            found = await self._record_of(existing)
            if found is not None and found.owner != owner:  # a key never hands over another's task
                raise PermissionDenied("this idempotency key names another user's task")
            if found is not None:
                await self._queue_again(found, request, trace)
                return found, False, 0
            # The key names a submission that stopped before its record (its store failed; a
            # write may even land after its writer gave up): this one finishes it, under that id.
            task_id = request.metadata.correlation_id = existing
            adopted = True
        await store.listen(keys.outcomes_of(sender))  # so its outcome is heard, not read
        meta = request.metadata
        record = TaskRecord(
            task_id=task_id,
            agent=agent,
            action=request.payload.action,
            conversation_id=request.conversation_id,
            submitted_at=meta.timestamp,
            deadline=meta.deadline or meta.timestamp + (meta.ttl_ms or 0),
            owner=owner,
            sender=sender,
            key=key,
            max_attempts=max_attempts,
        )
        try:
            if not await store.create(keys.record(sender, task_id), record):
                found = await self._record_of(task_id) if adopted else None
                if found is not None:  # its first submitter wrote it meanwhile: that task, queued once
                    await self._queue_again(found, request, trace)
                    return found, False, 0
                raise InvalidParams("a task with this id exists already", details={"field": "taskId"})
            sequence = await self._enqueue(record, request, trace)
        except Unavailable:
            # The store may have taken any of it, now or once it is back (a lost reply): the
            # key stays, so a retry with it finishes this submission instead of making another.
            raise
        except A2AError as exc:
            # Not accepted: neither its record nor its key may name a task that never runs
            # (a retry submits anew). A record another submission owns stays.
            with anyio.CancelScope(shield=True):
                if not (isinstance(exc, InvalidParams) and exc.details.get("field") == "taskId"):
                    await self._forget(keys.record(sender, task_id))
                if idempotency is not None:
                    await self._forget(idempotency)
            raise
        return record, True, sequence

    async def _queue_again(
        self, found: TaskRecord, request: RequestEnvelope, trace: dict[str, str] | None
    ) -> None:
        """Queue ``found`` again, as ``request`` under its id, while its submission may have
        failed after its record and before its request was queued. The queue drops the copy
        when the first one was stored (the same message id within its duplicate window),
        which REQUEUE_WITHIN keeps well inside."""
        if (
            found.sender != self.subjects.sender
            or now_ms() - found.submitted_at > REQUEUE_WITHIN * 1000
            or await self.store.get(TaskKeys.of(found).outcome, TaskOutcome) is not None
        ):
            return
        meta = request.metadata
        meta.correlation_id, meta.deadline = found.task_id, found.deadline
        meta.ttl_ms = max(0, found.deadline - now_ms())
        await self._enqueue(found, request, trace)

    async def _enqueue(
        self, record: TaskRecord, request: RequestEnvelope, trace: dict[str, str] | None
    ) -> int:
        """Queue ``request`` as the task ``record`` describes, until its deadline; its place in the queue."""
        queued = QueuedTask(
            task_id=record.task_id, request=request, max_attempts=record.max_attempts, trace=trace
        )
        ttl = max(1.0, (record.deadline - now_ms()) / 1000)
        return await self.store.enqueue(
            self.subjects.task_queue(record.agent), record.task_id, queued, ttl=ttl
        )

    async def _forget(self, key: str) -> None:
        try:
            await self.store.delete(key)
        except A2AError as exc:
            log.warning("a key of a refused task stays: %s", exc)

    async def _record_of(self, task_id: str) -> TaskRecord | None:
        """The record of a task just submitted by another process (it may be a moment behind)."""
        for _ in range(20):
            record = await self.store.get(keys.record(self.subjects.sender, task_id), TaskRecord)
            if record is not None:
                return record
            await anyio.sleep(0.05)
        return None

    async def record(self, task_id: str, user_id: str | None) -> TaskRecord:
        """The record of ``task_id``, for its owner only.

        Raises:
            PermissionDenied: no such task, or it belongs to another user (the two look alike).
        """
        record = None
        if _TASK_ID.match(task_id):
            record = await self.store.get(keys.record(self.subjects.sender, task_id), TaskRecord)
        if record is None or record.owner != user_id:
            raise PermissionDenied("no such task for this user", details={"taskId": task_id[:64]})
        return record

    async def outcome(self, record: TaskRecord, queued_at: int = 0) -> TaskOutcome:
        """Wait for the task's outcome; at its deadline, end it DEADLINE_EXCEEDED (unless it ended).

        ``queued_at`` is the task's place in the queue when this process queued it: when the
        store has heard every write since before it, the outcome is not read but heard."""
        store = self.store
        key = TaskKeys.of(record).outcome
        family = keys.outcomes_of(record.sender)
        async with store.watch(key, family=family) as notice:
            covered = queued_at > 0 and store.heard(key, family, queued_at)[0]
            heard = notice.take(key)  # written before the watch began
            if heard is not None:
                found = decode(heard, TaskOutcome) or _unreadable()
            elif covered:  # every write since its submission was heard: nothing to read yet
                found = None
            else:
                found = await store.get(key, TaskOutcome)
            while found is None:
                left = (record.deadline - now_ms()) / 1000
                if left <= 0:
                    late = DeadlineExceeded(f"the task did not end before its deadline ({record.agent})")
                    ended = TaskOutcome(state="failed", error=late.to_info(), finished_at=now_ms())
                    if await store.create(key, ended):  # unless another outcome was stored first
                        return ended
                    # Something was stored there first: an outcome, or something that is not one.
                    return await self._read(key) or _unreadable()
                with anyio.move_on_after(min(left, RECHECK)):
                    await notice.wait()
                heard = notice.take(key)  # a stored value the store vouches for: no read needed
                if heard is not None:
                    found = decode(heard, TaskOutcome) or _unreadable()
                else:
                    found = await self._read(key)
            return found

    async def _read(self, key: str) -> TaskOutcome | None:
        """The outcome at ``key``. A notice of its write can arrive a moment before the store
        answers reads with it, so a miss is read again a few times, briefly."""
        for pause in (0.0, 0.001, 0.005, 0.02, 0.05):
            await anyio.sleep(pause)
            found = await self.store.get(key, TaskOutcome)
            if found is not None:
                return found
        return None

    async def peek(self, record: TaskRecord) -> TaskOutcome | None:
        """The outcome if the task has ended, else None."""
        return await self.store.get(TaskKeys.of(record).outcome, TaskOutcome)

    async def cancel(self, record: TaskRecord, reason: str = "cancelled by its caller") -> TaskOutcome:
        """Mark the task cancelled: no attempt starts after this, a running one is stopped.

        Returns the task's outcome: CANCELLED, or how it ended before the cancel.
        """
        return await self.cancel_keys(TaskKeys.of(record), reason)

    async def cancel_keys(self, at: TaskKeys, reason: str) -> TaskOutcome:
        """:meth:`cancel` of the task whose keys are ``at`` (its record unread)."""
        store = self.store
        await store.put(at.cancel, reason)
        error = Cancelled(reason, details={"taskId": at.task_id})
        await store.create(
            at.outcome, TaskOutcome(state="cancelled", error=error.to_info(), finished_at=now_ms())
        )
        found = await store.get(at.outcome, TaskOutcome)
        assert found is not None
        return found

    async def list(
        self, user_id: str | None, *, limit: int = 1000
    ) -> list[tuple[TaskRecord, TaskOutcome | None]]:
        """The tasks this identity submitted for ``user_id`` (newest first, ``limit`` at most),
        each with its outcome (None while it runs)."""
        found = sorted(await self.store.keys(keys.records_of(self.subjects.sender)))
        listed: list[tuple[TaskRecord, TaskOutcome | None]] = []
        limiter = anyio.Semaphore(32)

        async def read(key: str) -> None:
            async with limiter:
                record = await self.store.get(key, TaskRecord)
                if record is not None and record.owner == user_id:
                    listed.append((record, await self.peek(record)))

        async with anyio.create_task_group() as tg:
            for key in found:
                tg.start_soon(read, key)
        listed.sort(key=lambda pair: pair[0].submitted_at, reverse=True)
        return listed[:limit]

    async def events(self, record: TaskRecord, after: int = 0) -> AsyncIterator[TaskEvent]:
        """The task's journal after event number ``after``, as it is written, ending with an
        ``ended`` event once the task has an outcome (at its deadline at the latest)."""

        async def at_deadline() -> TaskOutcome | None:
            return await self.outcome(record) if record.deadline <= now_ms() else None

        async for event in follow(self.store, TaskKeys.of(record), after, at_deadline):
            yield event


def _unreadable() -> TaskOutcome:
    bad = InvalidEnvelope("the task's stored outcome is unreadable", details={"field": "outcome"})
    return TaskOutcome(state="failed", error=bad.to_info(), finished_at=now_ms())
