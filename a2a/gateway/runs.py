"""A task whose call runs on this gateway replica, and the streams that follow it."""

from __future__ import annotations

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from transports.a2a_http import INTERRUPTED_STATES, TERMINAL_STATES, StreamResponse, Task

from .tasks import StoredTask

__all__ = ["Run", "is_done", "snapshot", "trimmed"]

_STREAM_BUFFER = 256


def snapshot(task: Task) -> Task:
    """A copy that later changes of state (new status, new artifacts) leave alone."""
    return msgspec.structs.replace(task)


def is_done(task: Task) -> bool:
    """Terminal, or waiting for the client: nothing more happens by itself."""
    return task.status.state in TERMINAL_STATES or task.status.state in INTERRUPTED_STATES


def trimmed(task: Task, history_length: int | None) -> Task:
    """The task with at most ``history_length`` history messages (None: all, 0: none)."""
    if history_length is None or len(task.history) <= history_length:
        return task
    history = task.history[len(task.history) - history_length :] if history_length else []
    return Task(
        id=task.id,
        context_id=task.context_id,
        status=task.status,
        artifacts=task.artifacts,
        history=history,
        metadata=task.metadata,
    )


class Run:
    """A task whose bus call runs on this replica."""

    def __init__(self, stored: StoredTask) -> None:
        self.stored = stored
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.listeners: set[MemoryObjectSendStream[StreamResponse]] = set()
        self.conversation = ""
        """The bus conversation of the call (the task's context, scoped to its owner)."""
        self.known = {stored.task.id}
        """Ids of the calls in this task's tree seen so far: the task id names the first one."""
        self.unpublished: list[StreamResponse] = []
        """Events streamed here but not yet published to other replicas (they go with the next save)."""
        self.reason: str | None = None
        """Why the call was cancelled, when it was."""

    @property
    def task(self) -> Task:
        return self.stored.task

    def listen(self) -> MemoryObjectReceiveStream[StreamResponse]:
        send, receive = anyio.create_memory_object_stream[StreamResponse](_STREAM_BUFFER)
        self.listeners.add(send)
        return receive

    def emit(self, event: StreamResponse) -> None:
        for listener in list(self.listeners):
            try:
                listener.send_nowait(event)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                # A listener that does not keep up loses its stream (it may resubscribe).
                self.listeners.discard(listener)
                listener.close()

    def close(self) -> None:
        for listener in self.listeners:
            listener.close()
        self.listeners.clear()
