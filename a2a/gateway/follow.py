"""Following a task's events: from the run on this replica, or from Redis for a run elsewhere."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from discovery.errors import redis_errors
from transports.a2a_http import StreamResponse, TaskStatusUpdateEvent

from .runs import Run, is_done, is_final, snapshot
from .tasks import StoredTask, TaskStore

__all__ = ["follow_elsewhere", "follow_run"]


KEEPALIVE = 15.0
"""Seconds of silence after which a stream of a run here carries a keep-alive (``None``)."""


async def follow_run(run: Run) -> AsyncIterator[StreamResponse | None]:
    """The task as it is when iteration begins, then every event of its run here.

    The snapshot and the listening begin together, so no event is missed; and nothing is
    held until then, nor once the stream ends.
    """
    receive = run.listen()
    try:
        async for event in events_of(StreamResponse(task=snapshot(run.task)), receive):
            yield event
    finally:
        run.unlisten(receive)


async def events_of(
    first: StreamResponse, receive: MemoryObjectReceiveStream[StreamResponse]
) -> AsyncIterator[StreamResponse | None]:
    """``first``, then what ``receive`` brings until it closes; ``None`` after each quiet spell."""
    yield first
    async with receive:
        while True:
            with anyio.move_on_after(KEEPALIVE) as quiet:
                try:
                    event = await receive.receive()
                except anyio.EndOfStream:
                    return
            yield None if quiet.cancelled_caught else event


async def follow_elsewhere(
    store: TaskStore, stored: StoredTask, owned: Callable[[str], Awaitable[StoredTask]]
) -> AsyncIterator[StreamResponse | None]:
    """The task now, then the events another replica publishes, until it ends.

    While nothing comes, the task is read again every second: it may have ended unseen,
    or its replica may have gone (``owned`` fails such a task and returns it).
    """
    task_id = stored.task.id
    async with store.listen(store.events_channel(task_id)) as pubsub:
        latest = await store.load(task_id) or stored
        yield StreamResponse(task=latest.task)
        if is_done(latest.task):
            return
        quiet = 0
        while True:
            with redis_errors("follow a task"):
                msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            if msg is None:
                quiet += 1
                if quiet % int(KEEPALIVE) == 0:
                    yield None
                again = await owned(task_id)
                if is_done(again.task):
                    task = again.task
                    yield StreamResponse(
                        status_update=TaskStatusUpdateEvent(
                            task_id=task_id, context_id=task.context_id, status=task.status
                        )
                    )
                    return
                continue
            event = store.decode_event(msg.get("data"))
            if event is None:
                continue
            yield event
            update = event.status_update
            if update is not None and is_final(update.status.state):
                return
