"""What a durable task keeps in the store: the queued request, its record, attempts, outcome."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from ..wire import ErrorInfo, RequestEnvelope, TokenUsage, Wire

__all__ = ["TASK_ID", "AttemptRecord", "EffectRecord", "QueuedTask", "TaskOutcome", "TaskRecord"]

TASK_ID = r"^[A-Za-z0-9_-]{1,64}$"
TaskId = Annotated[str, Meta(pattern=TASK_ID)]
"""A task id: one token of a KV key (the runtime's are 32 hex characters)."""
Attempts = Annotated[int, Meta(ge=1, le=100)]


class QueuedTask(Wire):
    """The message on the task queue: the request as submitted, and how often it may be tried."""

    task_id: TaskId
    request: RequestEnvelope
    max_attempts: Attempts = 5


class TaskRecord(Wire):
    """Written once when a task is accepted: who may see it, where it went, until when."""

    task_id: TaskId
    agent: str
    action: str
    conversation_id: str
    submitted_at: int
    """Milliseconds since the epoch."""
    deadline: int
    """Milliseconds since the epoch: no attempt starts after it, and the task ends by it."""
    owner: str | None = None
    """The user it was submitted for: only that user's calls read, follow or cancel it."""
    sender: str = ""
    """The identity that queued it (the last token of its queue subject); a queue message
    from anyone else for this task is refused."""
    key: str | None = None
    max_attempts: Attempts = 5


class AttemptRecord(Wire):
    """One attempt: written when it starts, again when it ends (a crash leaves no end)."""

    attempt: int
    instance: str
    started_at: int
    ended_at: int | None = None
    reason: str | None = None
    """How it ended when it did not produce the outcome (given back at shutdown, say)."""


class EffectRecord(Wire):
    """A side effect of a task: written when it starts, with its result when it ends."""

    attempt: int
    done: bool = False
    result: Any = None


class TaskOutcome(Wire):
    """How the task ended: stored once, the first writer wins."""

    state: Literal["completed", "failed", "cancelled"]
    result: Any = None
    error: ErrorInfo | None = None
    attempt: int = 0
    """The attempt that ended it (0: it never ran)."""
    instance: str | None = None
    usage: TokenUsage | None = None
    finished_at: int = 0
