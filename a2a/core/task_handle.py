"""A handle on one durable task: wait for it, follow it, cancel it, from any process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from bus.durable import TaskClient, TaskEvent, TaskOutcome, TaskRecord
from bus.errors import A2AError, error_from_info

__all__ = ["Task"]


class Task:
    """A handle on one durable task; any number of them, in any process, may follow it."""

    def __init__(
        self, client: TaskClient, record: TaskRecord, created: bool = True, outcome: TaskOutcome | None = None
    ) -> None:
        self._client = client
        self.record = record
        self.created = created
        """False when an idempotency key named a task submitted before (nothing was queued again)."""
        self.seen = outcome
        """How the task had ended when it was listed (None: it had not)."""
        self.queued_at = 0
        """Its place in the queue, when this process queued it (0: it did not)."""

    @property
    def id(self) -> str:
        return self.record.task_id

    async def outcome(self) -> TaskOutcome:
        """Wait for the task to end (by its deadline at the latest) and return how it ended."""
        return await self._client.outcome(self.record, self.queued_at)

    async def result(self) -> Any:
        """Wait for the task's result.

        Raises:
            A2AError: the typed error the task ended with (DEADLINE_EXCEEDED, CANCELLED, ...).
        """
        return _result_of(await self.outcome())

    async def peek(self) -> TaskOutcome | None:
        """How the task ended, or None while it has not."""
        return await self._client.peek(self.record)

    async def cancel(self) -> TaskOutcome:
        """Cancel the task: no attempt starts after this, and a running one is stopped.

        Returns how the task ended (CANCELLED, or its outcome if it had ended before).
        """
        return await self._client.cancel(self.record)

    def events(self, after: int = 0) -> AsyncIterator[TaskEvent]:
        """Follow the task: its journal after event ``after`` (each event's ``n`` is the
        cursor to resume from), as it is written, until a last ``ended`` event::

            async for event in task.events(after=cursor):
                cursor = event.n
        """
        return self._client.events(self.record, after)


def _result_of(outcome: TaskOutcome) -> Any:
    if outcome.state == "completed":
        return outcome.result
    if outcome.error is None:
        raise A2AError(f"the task ended {outcome.state} without a reason")
    raise error_from_info(outcome.error)
