"""The callee half of durable tasks: take an agent's tasks, run each attempt, store its outcome once.

Per delivery (:meth:`Taker._attempt`):

    undecodable              dropped for good (counted, logged)
    outcome stored already   acknowledged (a redelivery of a task that ended)
    cancelled                acknowledged (the canceller stored the outcome)
    past its deadline        DEADLINE_EXCEEDED stored, acknowledged; the handler never runs
    attempt > max_attempts   FAILED stored with every attempt's story, dropped
    else                     the attempt is recorded, then run with the delivery kept alive
                             (``working`` every ack_wait / 3) and the cancel key watched;
                             its outcome is created (the first writer wins), then acknowledged

A crash leaves the delivery unacknowledged: after the ack wait the queue delivers it again,
``attempt`` one higher, to any instance of the agent. At shutdown, :meth:`Taker.stop` stops
taking, lets running attempts finish within the grace, and gives the others back at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import anyio
import msgspec

from transports.durable import Delivery

from ..errors import A2AError, AgentLost, DeadlineExceeded
from ..rejects import Rejects
from ..subjects import Subjects
from . import keys
from .attempt import Attempt
from .store import TaskStore
from .submit import now_ms
from .wire import AttemptRecord, QueuedTask, TaskOutcome, TaskRecord

__all__ = ["RunAttempt", "Taker"]

log = logging.getLogger("a2a.tasks")

RunAttempt = Callable[[Attempt, str], Awaitable[TaskOutcome]]
"""Runs one attempt for the sender (the token its queue subject names); returns its outcome."""

TAKE_WAIT = 5.0
"""Seconds one take waits for work before it asks again."""

_queued = msgspec.json.Decoder(QueuedTask)


class Taker:
    """Takes the tasks of ``agent`` for the instance ``instance``, ``capacity`` at a time."""

    def __init__(
        self, store: TaskStore, subjects: Subjects, agent: str, instance: str, *, ack_wait: float
    ) -> None:
        self.store = store
        self.agent = agent
        self.instance = instance
        self.ack_wait = ack_wait
        self.subject = subjects.receiving().task_queue(agent)
        self.rejects = Rejects(log, f"{instance}: task")
        self.running = 0
        self._freed = anyio.Event()
        self._taking = anyio.CancelScope()
        self._all = anyio.CancelScope()
        self._hand_back = True

    async def run(self, run_attempt: RunAttempt, capacity: int) -> None:
        """Take and run tasks until :meth:`stop` (or cancelled)."""
        with self._all:
            async with anyio.create_task_group() as tg:
                with self._taking:
                    while True:
                        while self.running >= capacity:
                            self._freed = anyio.Event()
                            await self._freed.wait()
                        try:
                            deliveries = await self.store.take(
                                self.agent, self.subject, max_items=capacity - self.running, timeout=TAKE_WAIT
                            )
                        except A2AError as exc:  # the store is away: ask again in a moment
                            log.warning("%s: cannot take tasks: %s", self.instance, exc)
                            await anyio.sleep(1.0)
                            continue
                        for delivery in deliveries:
                            self.running += 1
                            tg.start_soon(self._attempt, delivery, run_attempt)

    async def stop(self, grace: float, *, hand_back: bool = True) -> None:
        """Take no more; give running attempts ``grace`` seconds, then hand them back at once.

        With ``hand_back=False`` the attempts are dropped as a crash would drop them: their
        deliveries come back only after the ack wait (for tests of redelivery).
        """
        self._hand_back = hand_back
        self._taking.cancel()
        with anyio.move_on_after(grace):
            while self.running:
                self._freed = anyio.Event()
                await self._freed.wait()
        self._all.cancel()

    async def _attempt(self, delivery: Delivery, run_attempt: RunAttempt) -> None:
        try:
            await self._settle(delivery, run_attempt)
        except anyio.get_cancelled_exc_class():
            if self._hand_back:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2), suppress(Exception):
                    await delivery.nak()  # the instance stops: another takes it at once
                    await self._handed_back(delivery)
            raise
        except Exception as exc:  # the store failed: the delivery comes back after the ack wait
            log.warning("%s: task attempt not settled: %s", self.instance, exc)
        finally:
            self.running -= 1
            self._freed.set()

    async def _settle(self, delivery: Delivery, run_attempt: RunAttempt) -> None:
        store = self.store
        try:
            queued = _queued.decode(delivery.data)
        except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError) as exc:
            self.rejects("undecodable", str(exc)[:200])
            await delivery.term()
            return
        task_id = queued.task_id
        meta = queued.request.metadata
        if meta.deadline is not None and meta.deadline <= now_ms():
            late = DeadlineExceeded(f"the task's deadline passed before {self.agent} could start it")
            await self._finish(delivery, queued, TaskOutcome(state="failed", error=late.to_info()))
            return
        if delivery.attempt > queued.max_attempts:
            await self._give_up(delivery, queued)
            return
        # One round trip: the attempt is recorded while its task's outcome and checkpoint are read.
        started = AttemptRecord(attempt=delivery.attempt, instance=self.instance, started_at=now_ms())
        found: list[Any] = [None, None, None]

        async def read(index: int, key: str, kind: type[Any]) -> None:
            found[index] = await store.get(key, kind)

        async with anyio.create_task_group() as tg:
            tg.start_soon(store.put, keys.attempt(task_id, delivery.attempt), started)
            tg.start_soon(read, 0, keys.outcome(task_id), TaskOutcome)
            tg.start_soon(read, 2, keys.record(task_id), TaskRecord)
            if delivery.attempt > 1:  # a first attempt has nothing to resume from
                tg.start_soon(read, 1, keys.checkpoint(task_id), object)
        sender = delivery.subject[delivery.subject.rfind(".") + 1 :]
        if not _describes(found[2], queued, self.agent, sender):
            self.rejects("not the task its record describes", f"{task_id} from {sender}")
            await delivery.term()
            return
        if found[0] is not None:
            await delivery.ack()  # it ended (or was cancelled) already
            return
        attempt = Attempt(store, queued, delivery.attempt, found[1])
        outcome: TaskOutcome | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._keep_alive, delivery)
            tg.start_soon(self._watch_cancel, task_id, tg.cancel_scope)
            outcome = await run_attempt(attempt, sender)
            tg.cancel_scope.cancel()
        if outcome is None:  # cancelled through its cancel key: the canceller stored the outcome
            await delivery.ack()
            return
        outcome.attempt, outcome.instance = delivery.attempt, self.instance
        await self._finish(delivery, queued, outcome)

    async def _handed_back(self, delivery: Delivery) -> None:
        """Record why an attempt ended without an outcome (its task's story, should all fail)."""
        try:
            task_id = _queued.decode(delivery.data).task_id
        except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
            return
        now = now_ms()
        reason = "handed back: its instance stopped"
        ended = AttemptRecord(
            attempt=delivery.attempt, instance=self.instance, started_at=now, ended_at=now, reason=reason
        )
        try:
            await self.store.put(keys.attempt(task_id, delivery.attempt), ended)
        except Exception as exc:  # the store is away: the story lacks this line
            log.debug("%s: attempt record not written: %s", self.instance, exc)

    async def _finish(self, delivery: Delivery, queued: QueuedTask, outcome: TaskOutcome) -> None:
        """Store the outcome (unless one was stored first), then acknowledge."""
        if not outcome.finished_at:
            outcome.finished_at = now_ms()
        await self.store.create(keys.outcome(queued.task_id), outcome)
        await delivery.ack()

    async def _give_up(self, delivery: Delivery, queued: QueuedTask) -> None:
        """Every attempt died: the task ends FAILED, with what each attempt left behind."""
        reasons = []
        for n in range(1, queued.max_attempts + 1):
            record = await self.store.get(keys.attempt(queued.task_id, n), AttemptRecord)
            if record is None:
                reasons.append(f"attempt {n}: no record")
            elif record.ended_at is None:
                reasons.append(f"attempt {n} on {record.instance}: no end recorded (its process died?)")
            else:
                reasons.append(f"attempt {n} on {record.instance}: {record.reason or 'ended'}")
        lost = AgentLost(
            f"every one of {queued.max_attempts} attempts of the task died",
            agent=self.agent,
            details={"attempts": reasons},
        )
        failed = TaskOutcome(state="failed", error=lost.to_info(), finished_at=now_ms())
        await self.store.create(keys.outcome(queued.task_id), failed)
        await delivery.term()

    async def _keep_alive(self, delivery: Delivery) -> None:
        while True:
            await anyio.sleep(self.ack_wait / 3)
            try:
                await delivery.working()
            except Exception as exc:  # the store is away: the attempt goes on, it may be redelivered
                log.debug("%s: keeping a task alive failed: %s", self.instance, exc)

    async def _watch_cancel(self, task_id: str, scope: anyio.CancelScope) -> None:
        key = keys.cancel(task_id)
        async with self.store.watch(key) as notice:
            while await self.store.raw.get(key) is None:  # whatever it holds, it is there
                await notice.wait()
        scope.cancel()


def _describes(record: TaskRecord | None, queued: QueuedTask, agent: str, sender: str) -> bool:
    """The queued message is the task its record was written for: the same id, agent,
    sender, user and attempts. Anyone else who can publish on the queue could otherwise
    run a request of their own under another user's task id."""
    request = queued.request
    return (
        record is not None
        and record.agent == agent
        and record.sender == sender
        and record.owner == request.user_id
        and record.max_attempts == queued.max_attempts
        and request.metadata.correlation_id == queued.task_id
    )
