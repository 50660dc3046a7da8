"""The durable tasks a console user submitted through this console's runtime: listed, read with
their journals, submitted and cancelled, always as that user.

A task is ``queued`` until an attempt journals its start (an attempt journals it once it has
run 0.2 s or written anything), ``running`` while one runs, ``queued`` again after a hand-back,
then ``completed``, ``failed`` or ``cancelled`` as its stored outcome says. Journals only
grow, so the console keeps what it read of each (the newest ``KEEP_JOURNALS`` tasks) and
reads only the events written since; a task past its deadline that nobody ended is ended
``DEADLINE_EXCEEDED`` when read, as any waiter would. Where the store refuses to list keys
(``a2a nats-config``'s permissions), the list holds the tasks submitted or opened here.
"""

from __future__ import annotations

import logging
import math
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from bus.durable import TaskEvent, TaskOutcome, TaskStore, keys
from bus.durable.journal import first_free
from bus.durable.wire import TASK_ID, now_ms
from bus.errors import InvalidParams, PermissionDenied, Unavailable
from bus.subjects import validate_name

from ..core.durable import Tasks
from ..core.task_handle import Task

__all__ = ["TaskNotFound", "TaskView", "checked_id"]

log = logging.getLogger("a2a.console")

SHOWN_TASKS = 100
"""Tasks listed at most (the newest)."""
SHOWN_EVENTS = 200
"""Journal events shown at most (the newest); a read catches up ``2 * SHOWN_EVENTS`` at most."""
KEEP_JOURNALS = 1000
REMEMBERED = 200
"""Tasks remembered per user, for when the store does not list them."""
TEXT = 8192
"""Characters of a result or an update shown (the rest is cut)."""
SETTLE = 3.0
"""Seconds spent at most ending a task past its deadline."""
_TASK_ID = re.compile(TASK_ID)
_ACTION = re.compile(r"^[^\x00-\x20\x7f][^\x00-\x1f\x7f]{0,255}$")
_FIELDS = {"agent", "action", "params", "key", "timeout", "maxAttempts"}
_ENDED = {"completed", "failed", "cancelled"}


class TaskNotFound(InvalidParams):
    """No task of this id for this user (another user's gets the same answer: ids are not probed)."""


def checked_id(task_id: str) -> str:
    """Raises:
    InvalidParams: not a task id (1 to 64 letters, digits, ``_`` or ``-``)."""
    if not _TASK_ID.match(task_id):
        raise InvalidParams("a task id has 1 to 64 letters, digits, '_' or '-'")
    return task_id


@dataclass
class _Journal:
    """What was read of one task's journal."""

    events: list[TaskEvent] = field(default_factory=list)
    """The newest ``SHOWN_EVENTS`` events read, in order."""
    read: int = 0
    """The number of the last event read."""
    attempts: int = 0
    started_at: int | None = None
    handed_back: bool = False
    """The last attempt event is a hand-back: the task waits in the queue again."""
    done: bool = False
    """Read to its end after the task's outcome: nothing more will come."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class TaskView:
    """The console's side of ``rt.tasks`` (None of it works while tasks are off)."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self._journals: OrderedDict[str, _Journal] = OrderedDict()
        self._mine: dict[str, OrderedDict[str, None]] = {}

    @property
    def enabled(self) -> bool:
        return self.tasks.store is not None

    def _on(self) -> None:
        if not self.enabled:
            raise Unavailable("durable tasks are off here: set A2A_TASKS=1 (JetStream is needed)")

    async def listing(self, user: str) -> dict[str, Any]:
        """The user's tasks, newest first, with their state and attempts."""
        if not self.enabled:
            return {"enabled": False, "message": "durable tasks are off here", "tasks": [], "now": now_ms()}
        note = None
        try:
            found = await self.tasks.list(user, limit=SHOWN_TASKS + 1)
        except (Unavailable, PermissionDenied) as exc:
            note = f"the tasks could not be listed ({exc.message}); shown: those submitted or opened here"
            found = await self._remembered(user)
        more = len(found) > SHOWN_TASKS
        limiter = anyio.Semaphore(16)
        rows: list[dict[str, Any] | None] = [None] * min(len(found), SHOWN_TASKS)

        async def row(i: int, task: Task) -> None:
            async with limiter:
                outcome = task.seen or await self._settled(task)
                rows[i] = self._row(task, outcome, await self._journal(task, outcome))

        async with anyio.create_task_group() as tg:
            for i, task in enumerate(found[:SHOWN_TASKS]):
                tg.start_soon(row, i, task)
        return {"enabled": True, "tasks": rows, "more": more, "note": note, "now": now_ms()}

    async def detail(self, user: str, task_id: str) -> dict[str, Any]:
        """The task with its outcome and journal.

        Raises:
            TaskNotFound: no such task of this user.
        """
        task = await self._get(user, task_id)
        outcome = await task.peek() or await self._settled(task)
        return self._detail(task, outcome, await self._journal(task, outcome))

    async def submit(self, user: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Submit the task ``body`` describes; its row and whether it is new (False: the key
        named one submitted before).

        Raises:
            InvalidParams: a field missing or wrong.
            Unavailable: tasks are off, or the store is away.
        """
        self._on()
        unknown = sorted(set(body) - _FIELDS)
        if unknown:
            raise InvalidParams(f"unknown field {unknown[0]!r}; the fields are {', '.join(sorted(_FIELDS))}")
        agent, action = body.get("agent"), body.get("action")
        if not isinstance(agent, str) or not agent:
            raise InvalidParams("agent (the agent's name) is required")
        try:
            validate_name("agent name", agent)
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None
        if not isinstance(action, str) or not _ACTION.match(action):
            raise InvalidParams("action is required: 1 to 256 characters, no control characters")
        params = body.get("params")
        if params is not None and not isinstance(params, dict):
            raise InvalidParams("params must be a JSON object")
        key = body.get("key")
        if key is not None and not (isinstance(key, str) and 0 < len(key) <= 256):
            raise InvalidParams("key (an idempotency key) has 1 to 256 characters")
        timeout = body.get("timeout")
        if timeout is not None and not (
            isinstance(timeout, int | float)
            and not isinstance(timeout, bool)
            and math.isfinite(timeout)
            and 0 < timeout <= self.tasks.max_ttl
        ):
            raise InvalidParams(f"timeout is a number of seconds above 0, at most {self.tasks.max_ttl:g}")
        attempts = body.get("maxAttempts", 5)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 100:
            raise InvalidParams("maxAttempts is a whole number from 1 to 100")
        task = await self.tasks.submit(
            agent, action, params or {}, key=key, timeout=timeout, user_id=user, max_attempts=attempts
        )
        self._remember(user, task.id)
        outcome = None if task.created else await task.peek()
        return self._row(task, outcome, await self._journal(task, outcome)), task.created

    async def cancel(self, user: str, task_id: str) -> dict[str, Any]:
        """Cancel the task (one that ended keeps its outcome) and return it as it is now.

        Raises:
            TaskNotFound: no such task of this user.
        """
        task = await self._get(user, task_id)
        outcome = await task.cancel()
        return self._detail(task, outcome, await self._journal(task, outcome))

    async def _get(self, user: str, task_id: str) -> Task:
        self._on()
        checked_id(task_id)
        try:
            task = await self.tasks.get(task_id, user)
        except PermissionDenied:
            raise TaskNotFound("no such task") from None
        self._remember(user, task.id)
        return task

    def _remember(self, user: str, task_id: str) -> None:
        mine = self._mine.setdefault(user, OrderedDict())
        mine[task_id] = None
        mine.move_to_end(task_id)
        while len(mine) > REMEMBERED:
            mine.popitem(last=False)

    async def _remembered(self, user: str) -> list[Task]:
        found: list[Task] = []
        for task_id in reversed(self._mine.get(user, {})):
            try:
                task = await self.tasks.get(task_id, user)
            except PermissionDenied:
                continue
            task.seen = await task.peek()
            found.append(task)
        return sorted(found, key=lambda t: t.record.submitted_at, reverse=True)

    async def _settled(self, task: Task) -> TaskOutcome | None:
        """The outcome of a task past its deadline that nobody ended: DEADLINE_EXCEEDED, stored
        as a waiter stores it (None before its deadline, or when the store does not answer)."""
        if task.record.deadline > now_ms():
            return None
        with anyio.move_on_after(SETTLE):
            return await task.outcome()
        return None

    async def _journal(self, task: Task, outcome: TaskOutcome | None) -> _Journal:
        """What the task's journal holds, read from where the last read stopped."""
        journal = self._journals.pop(task.id, None) or _Journal()
        self._journals[task.id] = journal
        while len(self._journals) > KEEP_JOURNALS:
            self._journals.popitem(last=False)
        store = self.tasks.store
        if store is None:
            return journal
        async with journal.lock:  # the list and the task shown may read it at once
            if not journal.done:
                await self._read(store, keys.TaskKeys.of(task.record), journal, outcome is not None)
        return journal

    async def _read(self, store: TaskStore, at: keys.TaskKeys, journal: _Journal, ended: bool) -> None:
        if journal.read == 0 and await store.get(at.event(2 * SHOWN_EVENTS), TaskEvent) is not None:
            first = await store.get(at.event(1), TaskEvent)  # a long journal: its start, then its tail
            if first is not None and first.kind == "attempt":
                journal.started_at, journal.attempts = first.at, first.attempt
            journal.read = await first_free(store, at) - 1 - SHOWN_EVENTS
        for _ in range(2 * SHOWN_EVENTS):
            event = await store.get(at.event(journal.read + 1), TaskEvent)
            if event is None:
                journal.done = ended  # the outcome was read before: nothing more comes
                break
            journal.read = event.n = journal.read + 1
            journal.attempts = max(journal.attempts, event.attempt)
            if event.kind == "attempt" and journal.started_at is None:
                journal.started_at = event.at
            if event.kind in ("attempt", "handed-back"):
                journal.handed_back = event.kind == "handed-back"
            journal.events.append(event)
        del journal.events[:-SHOWN_EVENTS]

    def _row(self, task: Task, outcome: TaskOutcome | None, journal: _Journal) -> dict[str, Any]:
        r = task.record
        state: str
        if outcome is not None:
            state = outcome.state
        elif journal.attempts == 0 or journal.handed_back:
            state = "queued"
        else:
            state = "running"
        error = outcome.error if outcome is not None else None
        return {
            "id": r.task_id,
            "agent": r.agent,
            "action": r.action,
            "state": state,
            "ended": state in _ENDED,
            "attempts": max(journal.attempts, outcome.attempt if outcome is not None else 0),
            "maxAttempts": r.max_attempts,
            "submittedAt": r.submitted_at,
            "startedAt": journal.started_at,
            "endedAt": (outcome.finished_at or None) if outcome is not None else None,
            "deadline": r.deadline,
            "key": r.key,
            "conversationId": r.conversation_id,
            "error": None if error is None else {"code": error.code, "message": error.message},
        }

    def _detail(self, task: Task, outcome: TaskOutcome | None, journal: _Journal) -> dict[str, Any]:
        row = self._row(task, outcome, journal)
        events = [_event_row(e) for e in journal.events]
        if outcome is not None:  # the journal's last line, as a follower of it gets it
            ended = TaskEvent(
                kind="ended",
                attempt=outcome.attempt,
                at=outcome.finished_at,
                instance=outcome.instance,
                n=journal.read + 1,
                state=outcome.state,
            )
            events.append(_event_row(ended) | {"error": row["error"]})
        row.update(
            instance=outcome.instance if outcome is not None else None,
            tokens=outcome.usage.total or None if outcome is not None and outcome.usage is not None else None,
            result=_text(outcome.result) if outcome is not None and outcome.state == "completed" else None,
            events=events,
            earlier=journal.read - len(journal.events),
            now=now_ms(),
        )
        return row


def _event_row(e: TaskEvent) -> dict[str, Any]:
    child = None
    if e.kind == "child" and isinstance(e.data, dict):
        task_id, agent = e.data.get("taskId"), e.data.get("agent")
        if isinstance(task_id, str) and _TASK_ID.match(task_id) and isinstance(agent, str):
            child = {"taskId": task_id, "agent": agent[:128]}
    return {
        "n": e.n,
        "kind": e.kind,
        "attempt": e.attempt,
        "at": e.at or None,
        "instance": e.instance,
        "message": e.message,
        "state": e.state,
        "text": None if child is not None or e.data is None else _text(e.data),
        "child": child,
    }


def _text(value: Any) -> str:
    """``value`` as JSON text (a string as itself), cut at ``TEXT`` characters."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = msgspec.json.encode(value).decode()
        except (TypeError, msgspec.EncodeError):
            text = repr(value)
    return text if len(text) <= TEXT else text[: TEXT - 1] + "\u2026"
