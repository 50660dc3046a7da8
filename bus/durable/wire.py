"""What a durable task keeps in the store: the queued request, its record, attempts, outcome."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from msgspec import Meta

from ..wire import ErrorInfo, RequestEnvelope, TokenUsage, Wire

__all__ = [
    "TASK_ID",
    "Checkpoint",
    "EffectRecord",
    "QueuedTask",
    "TaskEvent",
    "TaskOutcome",
    "TaskRecord",
    "now_ms",
]

TASK_ID = r"^[A-Za-z0-9_-]{1,64}$"
TaskId = Annotated[str, Meta(pattern=TASK_ID)]
"""A task id: one token of a KV key (the runtime's are 22 characters of ``0-9a-zA-Z``)."""
Attempts = Annotated[int, Meta(ge=1, le=100)]
TraceHeaders = Annotated[
    dict[Annotated[str, Meta(max_length=64)], Annotated[str, Meta(max_length=512)]], Meta(max_length=4)
]


def now_ms() -> int:
    """Milliseconds since the epoch: the times a task's records keep."""
    return int(time.time() * 1000)


class QueuedTask(Wire):
    """The message on the task queue: the request as submitted, and how often it may be tried."""

    task_id: TaskId
    request: RequestEnvelope
    max_attempts: Attempts = 5
    trace: TraceHeaders | None = None
    """The submitter's trace context (``traceparent``): every attempt's span joins its trace."""


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


class TaskEvent(Wire):
    """One entry of a task's journal: an attempt starting or ending, or its handler's progress."""

    kind: Literal["attempt", "progress", "child", "handed-back", "ended"]
    """``attempt``: attempt ``attempt`` started on ``instance``; ``progress``: the handler's
    update (``data``); ``child``: the handler submitted the task ``data`` names
    (``{"taskId", "agent"}``), cancelled with this one; ``handed-back``: the attempt
    stopped without an outcome (``message`` says why); ``ended``: the task's outcome
    (never stored: a follower's last event)."""
    attempt: int = 0
    at: int = 0
    """Milliseconds since the epoch."""
    instance: str | None = None
    message: str | None = None
    data: Any = None
    n: int = 0
    """Its place in the journal (1, 2, ...): the cursor to follow the task after it."""
    state: str | None = None
    """The task's state once it ended (``ended`` only)."""


class Checkpoint(Wire):
    """A handler's last checkpoint, and the tokens its task had spent by then (all attempts)."""

    state: Any = None
    spent: int = 0


class EffectRecord(Wire):
    """A side effect of a task: written when it starts, with its result when it ends."""

    attempt: int
    done: bool = False
    result: Any = None
    by: str = ""
    """The mark of the attempt that wrote it (attempt numbers repeat after a server crash)."""


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
