"""The callee half of durable tasks: take an agent's tasks, run each attempt, store its outcome once.

Per delivery (:meth:`Taker._attempt`):

    undecodable              dropped for good (counted, logged)
    not its sender's task    dropped for good (counted, logged)
    outcome stored already   acknowledged (a redelivery of a task that ended)
    cancelled                acknowledged (the canceller stored the outcome)
    past its deadline        DEADLINE_EXCEEDED stored, acknowledged; the handler never runs
    attempt > max_attempts   FAILED stored with every attempt's story, dropped
    else                     run, kept alive and its cancel key watched; its outcome created
                             (the first writer wins), then acknowledged; a failure the store
                             caused (a checkpoint refused, say) is no outcome: run again

A crash leaves the delivery unacknowledged: after the ack wait the queue delivers it again,
``attempt`` one higher, to any instance of the agent. At shutdown, :meth:`Taker.stop` stops
taking, lets running attempts finish within the grace, and gives the others back at once.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from transports.durable import Delivery

from ..errors import A2AError, AgentLost, Cancelled, DeadlineExceeded, InvalidParams, PayloadTooLarge
from ..rejects import Rejects
from ..subjects import Subjects, is_name
from .attempt import Attempt
from .journal import Journal, first_free, read_all
from .keys import TaskKeys, cancels_for
from .store import TaskStore
from .submit import TaskClient
from .wire import Checkpoint, QueuedTask, TaskEvent, TaskOutcome, now_ms

__all__ = ["RunAttempt", "Taker"]

log = logging.getLogger("a2a.tasks")

RunAttempt = Callable[[Attempt, str], Awaitable[TaskOutcome]]
"""Runs one attempt for the sender (the token its queue subject names); returns its outcome."""

TICK = 0.05
"""Seconds between two rounds of tending the running attempts."""
START_AFTER = 0.2
"""Seconds a first attempt runs before its start is journaled (unless it journals sooner)."""
BACKOFF_CAP = 300.0
"""Seconds an attempt waits at most before it runs, after the attempts before it died."""
STORE_RETRY = 1.0
"""Seconds before an attempt that failed because the store did is run again."""
TAKE_WAIT = 5.0
"""Seconds one take waits for work before it asks again."""

_queued = msgspec.json.Decoder(QueuedTask)


class Taker:
    """Takes the tasks of ``agent`` for the instance ``instance``, ``capacity`` at a time."""

    def __init__(self, store: TaskStore, subjects: Subjects, agent: str, instance: str) -> None:
        self.store = store
        self.agent = agent
        self.instance = instance
        self.subject = subjects.receiving().task_queue(agent)
        self.client = TaskClient(store, subjects)
        self.rejects = Rejects(log, f"{instance}: task")
        self.running = 0
        self._freed = anyio.Event()
        self._taking = anyio.CancelScope()
        self._all = anyio.CancelScope()
        self._hand_back = True
        self._tended: set[_Tended] = set()

    async def run(self, run_attempt: RunAttempt, capacity: int) -> None:
        """Take and run tasks until :meth:`stop` (or cancelled)."""
        with self._all:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._tender)
                with self._taking:
                    while True:
                        while self.running >= capacity:
                            self._freed = anyio.Event()
                            await self._freed.wait()
                        try:
                            # Hear the agent's cancels (again, after a reconnect): a first
                            # attempt queued since then reads nothing before it runs.
                            await self.store.listen(cancels_for(self.agent))
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
                if self._hand_back:  # what the take cut short was sent goes back at once
                    with anyio.CancelScope(shield=True), anyio.move_on_after(2), suppress(Exception):
                        for delivery in await self.store.stop_taking(self.agent, self.subject):
                            await delivery.nak()

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
        held: list[Attempt] = []  # the attempt, once it starts
        try:
            found = await self._admit(delivery)
            if found is not None:
                queued, sender = found
                await self._settle(delivery, queued, sender, run_attempt, held)
        except anyio.get_cancelled_exc_class():
            if self._hand_back:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2), suppress(Exception):
                    await delivery.nak()  # the instance stops: another takes it at once
                    if held:
                        await self._handed_back(held[0])
            raise
        except Exception as exc:  # the store failed: the delivery comes back after the ack wait
            log.warning("%s: task attempt not settled: %s", self.instance, exc)
        finally:
            self.running -= 1
            self._freed.set()

    async def _admit(self, delivery: Delivery) -> tuple[QueuedTask, str] | None:
        """The queued task and its sender, or None when the delivery is settled already."""
        try:
            queued = _queued.decode(delivery.data)
        except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError) as exc:
            self.rejects("undecodable", str(exc)[:200])
            await delivery.term()
            return None
        sender = delivery.subject[delivery.subject.rfind(".") + 1 :]
        # The sender token is the publisher's own name (nats-server permissions see to it),
        # and every key of the task carries it: a message naming another sender's task id
        # reaches only keys of its own sender.
        if queued.request.metadata.correlation_id != queued.task_id or not is_name(sender):
            self.rejects("not a task of its sender", f"{queued.task_id} from {sender[:64]}")
            await delivery.term()
            return None
        return queued, sender

    async def _settle(
        self,
        delivery: Delivery,
        queued: QueuedTask,
        sender: str,
        run_attempt: RunAttempt,
        held: list[Attempt],
    ) -> None:
        store = self.store
        keys = TaskKeys(self.agent, sender, queued.task_id)
        meta = queued.request.metadata
        if meta.deadline is not None and meta.deadline <= now_ms():
            late = DeadlineExceeded(f"the task's deadline passed before {self.agent} could start it")
            await self._finish(delivery, keys, TaskOutcome(state="failed", error=late.to_info()))
            return
        if delivery.attempt > queued.max_attempts:
            await self._give_up(delivery, queued, keys)
            return
        number = delivery.attempt
        attempt = Attempt(store, queued, number, keys, Journal(store, keys, 1))
        attempt.instance, attempt.sequence = self.instance, delivery.sequence
        held.append(attempt)
        started = TaskEvent(kind="attempt", attempt=number, at=now_ms(), instance=self.instance)
        if number == 1:
            ended, pause = await self._first(attempt, started), 0.0
        else:
            ended, pause = await self._again(attempt, started, delivery.ack_wait)
        if ended is not None:  # it ended (or was cancelled) already
            if ended.state == "cancelled":
                await self._cascade(keys)
            await delivery.ack()
            return
        outcome: TaskOutcome | None = None
        with anyio.CancelScope() as scope:
            async with self._tending(delivery, attempt, scope):
                if pause > 0:  # its earlier attempts died: give what kills them a rest
                    await anyio.sleep(pause)
                outcome = await run_attempt(attempt, sender)
        if outcome is None:  # cancelled through its cancel key; the canceller stores the outcome
            # after the key: should it die in between, this one does (the first writer wins).
            error = Cancelled("cancelled by its caller", details={"taskId": keys.task_id}).to_info()
            await self.store.create(
                keys.outcome, TaskOutcome(state="cancelled", error=error, finished_at=now_ms())
            )
            await self._cascade(keys)
            await delivery.ack()
            return
        if outcome.state == "failed" and attempt.store_failed:
            # It failed because the store did (a checkpoint, an effect's record), which is no
            # end of the task: run it again once the store is back (an effect it started is
            # then reused, or in doubt).
            await delivery.nak(STORE_RETRY)
            return
        outcome.attempt, outcome.instance = number, self.instance
        await self._finish(delivery, keys, outcome)

    async def _first(self, attempt: Attempt, started: TaskEvent) -> TaskOutcome | None:
        """Before a first attempt: how its task ended already (cancelled before it was
        taken), or None. Its start is journaled only once it has run START_AFTER seconds (or
        writes anything), and no outcome is read when this instance has heard every cancel
        of the agent's tasks since before the task was queued: a short task costs its taker
        no store operation but storing its outcome."""
        attempt.journal.pending = started
        keys = attempt.keys
        covered, cancelled = self.store.heard(keys.cancel, cancels_for(self.agent), attempt.sequence)
        if cancelled is not None:
            return TaskOutcome(state="cancelled")  # the canceller stored its outcome
        return None if covered else await self.store.get(keys.outcome, TaskOutcome)

    async def _again(
        self, attempt: Attempt, started: TaskEvent, ack_wait: float
    ) -> tuple[TaskOutcome | None, float]:
        """Before a later attempt, in one round trip: its start is journaled after the
        earlier attempts' events, and the outcome and the last checkpoint are read. Returns
        the outcome (if the task ended) and the back-off to wait before running."""
        store, keys = self.store, attempt.keys
        found: list[Any] = [None, 0.0]

        async def journal_start() -> None:
            attempt.journal.next = await first_free(store, keys)
            if attempt.journal.next > 1:
                last = await store.get(keys.event(attempt.journal.next - 1), TaskEvent)
                found[1] = _backoff(attempt.number, ack_wait, last)
            await attempt.journal.append(started)

        async def read_outcome() -> None:
            found[0] = await store.get(keys.outcome, TaskOutcome)

        async def read_checkpoint() -> None:
            kept = await store.get(keys.checkpoint, Checkpoint)
            if kept is not None:
                attempt.last_checkpoint, attempt.spent_before = kept.state, kept.spent

        async with anyio.create_task_group() as tg:
            tg.start_soon(journal_start)
            tg.start_soon(read_outcome)
            tg.start_soon(read_checkpoint)
        return found[0], found[1]

    async def _cascade(self, keys: TaskKeys) -> None:
        """Cancel the tasks the cancelled task submitted (its journal names them)."""
        for event in await read_all(self.store, keys):
            if event.kind == "child" and isinstance(event.data, dict):
                child, agent = event.data.get("taskId"), event.data.get("agent")
                if isinstance(child, str) and isinstance(agent, str) and is_name(agent) and is_name(child):
                    at = TaskKeys(agent, self.client.subjects.sender, child)
                    await self.client.cancel_keys(at, f"its parent task {keys.task_id} was cancelled")

    async def _handed_back(self, attempt: Attempt) -> None:
        """Journal why an attempt ended without an outcome (its task's story, should all fail)."""
        reason = "handed back: its instance stopped"
        event = TaskEvent(
            kind="handed-back", attempt=attempt.number, at=now_ms(), instance=self.instance, message=reason
        )
        try:
            await attempt.journal.append(event)
        except Exception as exc:  # the store is away: the story lacks this line
            log.debug("%s: hand-back not journaled: %s", self.instance, exc)

    async def _finish(self, delivery: Delivery, keys: TaskKeys, outcome: TaskOutcome) -> None:
        """Store the outcome (unless one was stored first), then acknowledge."""
        if not outcome.finished_at:
            outcome.finished_at = now_ms()
        try:
            await self.store.create(keys.outcome, outcome)
        except (PayloadTooLarge, InvalidParams) as exc:  # the result is more than the store takes
            refused = TaskOutcome(
                state="failed", error=exc.to_info(), attempt=outcome.attempt, finished_at=now_ms()
            )
            refused.instance = outcome.instance
            await self.store.create(keys.outcome, refused)
        await delivery.ack()

    async def _give_up(self, delivery: Delivery, queued: QueuedTask, keys: TaskKeys) -> None:
        """Every attempt died: the task ends FAILED, with what each attempt left behind."""
        started: dict[int, str] = {}
        ended: dict[int, str] = {}
        for event in await read_all(self.store, keys):
            if event.kind == "attempt":
                started.setdefault(event.attempt, event.instance or "?")
            elif event.kind == "handed-back":
                ended[event.attempt] = event.message or "handed back"
        reasons = []
        for n in range(1, queued.max_attempts + 1):
            if n not in started:
                reasons.append(f"attempt {n}: no record")
            elif n not in ended:
                reasons.append(f"attempt {n} on {started[n]}: no end recorded (its process died?)")
            else:
                reasons.append(f"attempt {n} on {started[n]}: {ended[n]}")
        lost = AgentLost(
            f"every one of {queued.max_attempts} attempts of the task died",
            agent=self.agent,
            details={"attempts": reasons},
        )
        failed = TaskOutcome(state="failed", error=lost.to_info(), finished_at=now_ms())
        if not await self.store.create(keys.outcome, failed):  # it ended before: cancelled, say
            first = await self.store.get(keys.outcome, TaskOutcome)
            if first is not None and first.state == "cancelled":
                await self._cascade(keys)
        await delivery.term()

    @asynccontextmanager
    async def _tending(
        self, delivery: Delivery, attempt: Attempt, scope: anyio.CancelScope
    ) -> AsyncIterator[None]:
        """While an attempt runs: cancel ``scope`` once its task is cancelled (anything
        written under its cancel key), and have :meth:`_tender` keep its delivery alive and
        journal its start."""
        store, key, family = self.store, attempt.keys.cancel, cancels_for(self.agent)
        async with store.watch(key, family=family) as notice:
            notice.on_fire = scope.cancel
            covered, heard = store.heard(key, family, attempt.sequence)
            if (
                heard is not None
                or notice.written
                or (not covered and await self._read_cancel(key) is not None)
            ):
                scope.cancel()
            now = anyio.current_time()
            start_at = now + START_AFTER if attempt.journal.pending is not None else math.inf
            tended = _Tended(delivery, attempt, scope, now + delivery.ack_wait / 3, start_at)
            self._tended.add(tended)
            try:
                yield
            finally:
                self._tended.discard(tended)

    async def _tender(self) -> None:
        """For every running attempt: keep its delivery alive (every third of its ack wait,
        reading its cancel key then), and journal its start once it has run START_AFTER."""
        while True:
            await anyio.sleep(TICK)
            now = anyio.current_time()
            for tended in list(self._tended):
                try:
                    if now >= tended.start_at:
                        tended.start_at = math.inf
                        await tended.attempt.journal.flush()
                    if now >= tended.alive_at:
                        tended.alive_at = now + tended.delivery.ack_wait / 3
                        await tended.delivery.working()
                        # A cancel written while this instance was away from the server was
                        # not heard: it is read at each keep-alive.
                        if await self._read_cancel(tended.attempt.keys.cancel) is not None:
                            tended.scope.cancel()
                except Exception as exc:  # the store is away: the attempt goes on (it may be redelivered)
                    log.debug("%s: tending a task attempt failed: %s", self.instance, exc)

    async def _read_cancel(self, key: str) -> bytes | None:
        try:
            return await self.store.raw.get(key)
        except Exception as exc:  # the store is away: not known to be cancelled (the next notice tells)
            log.debug("%s: reading a cancel key failed: %s", self.instance, exc)
            return None


@dataclass(eq=False)
class _Tended:
    """A running attempt, and when it is next due to be kept alive and to journal its start."""

    delivery: Delivery
    attempt: Attempt
    scope: anyio.CancelScope
    alive_at: float
    start_at: float


def _backoff(number: int, ack_wait: float, last: TaskEvent | None) -> float:
    """Seconds attempt ``number`` waits before it runs, when the one before died: doubling
    from the ack wait (which has passed already by the time it is delivered again), counted
    from the last sign of life of the attempt before, at most BACKOFF_CAP. An attempt after
    a hand-back (its instance stopped cleanly) does not wait."""
    if last is None or last.kind == "handed-back":
        return 0.0
    wanted = min(BACKOFF_CAP, ack_wait * 2.0 ** (number - 2))
    return max(0.0, min(wanted - (now_ms() - last.at) / 1000, BACKOFF_CAP))
