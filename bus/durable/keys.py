"""The keys of a namespace's durable tasks in the store's bucket, named in one place.

    task.<sender>.<id>                      TaskRecord (written once, when the task is accepted)
    key.<sender>.<owner>.<key>              the task id an idempotency key of that user names
    outcome.<agent>.<sender>.<id>           TaskOutcome (written once: the first writer wins)
    cancel.<agent>.<sender>.<id>            set when the task is cancelled
    event.<agent>.<sender>.<id>.<n>         TaskEvent n of the task's journal (1, 2, ...)
    checkpoint.<agent>.<sender>.<id>        the handler's last checkpoint (JSON)
    effect.<agent>.<sender>.<id>.<name>     EffectRecord of one named side effect

``<sender>`` is the identity that submitted the task (the last token of its queue subject)
and ``<agent>`` the agent it was queued for, so each identity's part of the bucket is a set
of key patterns: a submitter writes and reads its own records and keys and reads the
outcomes and journals of its own tasks; an agent reads and writes the outcomes, journals,
checkpoints and effects of tasks queued for it, and reads their cancel keys.

Ids are the runtime's task ids (one token); names and keys chosen by users are hashed, so
every key is a valid KV key whatever they contain.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .wire import TaskRecord

__all__ = ["TaskKeys", "cancels_for", "events_of", "idempotency", "outcomes_of", "record", "records_of"]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def record(sender: str, task_id: str) -> str:
    return f"task.{sender}.{task_id}"


def records_of(sender: str) -> str:
    """Every record ``sender`` submitted (a wildcard: for listing and permissions)."""
    return f"task.{sender}.*"


def idempotency(sender: str, owner: str | None, key: str) -> str:
    user = "-" if owner is None else _digest("u=" + owner)  # no user, and user "", differ
    return f"key.{sender}.{user}.{_digest(key)}"


def outcomes_of(sender: str) -> str:
    """The outcomes of every task ``sender`` submitted (a wildcard: what its waiters watch)."""
    return f"outcome.*.{sender}.*"


def events_of(sender: str) -> str:
    """The journals of every task ``sender`` submitted (a wildcard: what its followers watch)."""
    return f"event.*.{sender}.*.*"


def cancels_for(agent: str) -> str:
    """The cancel keys of every task queued for ``agent`` (a wildcard: what its takers watch)."""
    return f"cancel.{agent}.*.*"


@dataclass(frozen=True, slots=True)
class TaskKeys:
    """The keys of one task: queued for ``agent`` by ``sender`` under ``task_id``."""

    agent: str
    sender: str
    task_id: str

    @classmethod
    def of(cls, record: TaskRecord) -> TaskKeys:
        return cls(record.agent, record.sender, record.task_id)

    @property
    def _tail(self) -> str:
        return f"{self.agent}.{self.sender}.{self.task_id}"

    @property
    def record(self) -> str:
        return record(self.sender, self.task_id)

    @property
    def outcome(self) -> str:
        return f"outcome.{self._tail}"

    @property
    def cancel(self) -> str:
        return f"cancel.{self._tail}"

    @property
    def checkpoint(self) -> str:
        return f"checkpoint.{self._tail}"

    def event(self, n: int) -> str:
        return f"event.{self._tail}.{n}"

    def effect(self, name: str) -> str:
        return f"effect.{self._tail}.{_digest(name)}"
