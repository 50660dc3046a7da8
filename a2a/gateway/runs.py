"""A task whose call runs on this gateway replica, and the streams that follow it."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from bus.errors import A2AError
from bus.ids import new_id
from transports.a2a_http import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from ..stores.audit import AuditRecord
from .mapping import now_rfc3339, resume_of, status
from .tasks import Numbered, StoredTask

__all__ = [
    "Run",
    "is_done",
    "is_final",
    "note_question",
    "overdue",
    "show_hop",
    "show_progress",
    "snapshot",
    "trimmed",
]

_STREAM_BUFFER = 256
Event = StreamResponse | Numbered
"""A stream event: numbered when the task's log keeps it (progress, states, artifacts), bare
when not (the hops below the task's call)."""
Receiving = MemoryObjectReceiveStream[Event]
"""A stream's receiving end."""


def overdue(stored: StoredTask, margin: float) -> bool:
    """Still running, ``margin`` seconds after its call's deadline: no outcome will come."""
    meta = stored.task.metadata or {}
    timeout_ms = meta.get("timeoutMs")
    if not isinstance(timeout_ms, int | float) or isinstance(timeout_ms, bool):
        return False
    return time.time() * 1000 > stored.updated + timeout_ms + margin * 1000


def snapshot(task: Task) -> Task:
    """A copy that later changes of state (new status, new artifacts) leave alone."""
    return msgspec.structs.replace(task)


def is_final(state: str) -> bool:
    """Terminal, or waiting for the client: nothing more happens by itself."""
    return state in TERMINAL_STATES or state in INTERRUPTED_STATES


def is_done(task: Task) -> bool:
    """The task's state is final (:func:`is_final`)."""
    return is_final(task.status.state)


def trimmed(task: Task, history_length: int | None) -> Task:
    """The task with at most ``history_length`` history messages (None: all, 0: none)."""
    if history_length is None or len(task.history) <= history_length:
        return task
    history = task.history[len(task.history) - history_length :] if history_length else []
    return msgspec.structs.replace(task, history=history)


class Run:
    """A task whose bus call runs on this replica."""

    def __init__(self, stored: StoredTask) -> None:
        self.stored = stored
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.listeners: dict[Receiving, MemoryObjectSendStream[Event]] = {}
        """Each stream's receiving end, and the end that events are sent to."""
        self.closed = False
        self.conversation = ""
        """The bus conversation of the call (the task's context, scoped to its owner)."""
        self.call_id = stored.task.id if not stored.task.history[1:] else new_id()
        """The correlation id of this run's bus call, which every hop below it carries: the
        task id for its first turn, a new one for each turn after (never used twice)."""
        self.unpublished: list[Numbered] = []
        """Events streamed here but not yet published to other replicas (they go with the next save)."""
        self.reason: str | None = None
        """Why the call was cancelled, when it was."""

    @property
    def task(self) -> Task:
        return self.stored.task

    def listen(self) -> Receiving:
        """The events emitted from now on (none once the run has ended: the stream ends at once)."""
        send, receive = anyio.create_memory_object_stream[Event](_STREAM_BUFFER)
        if self.closed:
            send.close()
        else:
            self.listeners[receive] = send
        return receive

    def unlisten(self, receive: Receiving) -> None:
        """Stop sending to ``receive`` (a stream that ended): nothing of it is kept."""
        send = self.listeners.pop(receive, None)
        if send is not None:
            send.close()
        receive.close()

    def numbered(self, event: StreamResponse) -> Numbered:
        """``event`` with the next number of the task's log."""
        self.stored.seq += 1
        return Numbered(self.stored.seq, event)

    def emit(self, event: Event) -> None:
        for receive, send in list(self.listeners.items()):
            try:
                send.send_nowait(event)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                # A listener that does not keep up loses its stream (it may resubscribe).
                self.unlisten(receive)

    def close(self) -> None:
        self.closed = True
        for send in self.listeners.values():
            send.close()
        self.listeners.clear()


def note_question(stored: StoredTask, error: A2AError) -> None:
    """Remember how to continue a task whose agent asked for input (INPUT_REQUIRED)."""
    resume = resume_of(error)
    if resume is not None:
        stored.resume = resume
        stored.asked = error.agent or stored.agent


def show_hop(runs: Iterable[Run], record: AuditRecord, text: str, metadata: dict[str, Any]) -> None:
    """A hop below a running task's call: a working status update on its streams (not stored).

    A hop belongs to the task whose call tree it is in: its correlation id is the run's.
    """
    tree = record.correlation_id or record.request_id
    for run in runs:
        if run.call_id != tree or run.conversation != record.conversation_id or is_done(run.task):
            continue
        event = StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=run.task.id,
                context_id=run.task.context_id,
                status=status("TASK_STATE_WORKING", text, metadata),
            )
        )
        run.emit(event)


def show_progress(run: Run, update: Any) -> None:
    """A progress update of the task's call (:meth:`a2a.Context.progress`): a working status
    update on its streams, logged with the next change of state (the task keeps its state);
    a text part for a string, else a data part."""
    if is_done(run.task):
        return
    part = Part(text=update) if isinstance(update, str) else Part(data=update)
    message = Message(message_id=new_id(), role="ROLE_AGENT", parts=[part], metadata={"progress": True})
    numbered = run.numbered(
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=run.task.id,
                context_id=run.task.context_id,
                status=TaskStatus(state="TASK_STATE_WORKING", message=message, timestamp=now_rfc3339()),
            )
        )
    )
    run.emit(numbered)
    run.unpublished.append(numbered)
