"""Following a task's events: from the run on this replica, or from Redis for a run elsewhere.

A stream may resume after a cursor (the number of the last event a client got: SSE's
``Last-Event-ID``): it begins with the task as it is, then the logged events numbered
after the cursor, then the live ones, each number once. Listening begins before the log is
read, so an event logged meanwhile comes either from the log or live, never neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import anyio

from discovery.errors import redis_errors
from transports.a2a_http import StreamResponse, TaskStatusUpdateEvent

from .runs import Event, Receiving, Run, is_done, is_final, snapshot
from .subscriptions import Events
from .tasks import Numbered, StoredTask, TaskStore

__all__ = ["events_of", "follow_elsewhere", "follow_run"]


KEEPALIVE = 15.0
"""Seconds of silence after which a stream of a run here carries a keep-alive (``None``)."""


async def follow_run(run: Run, store: TaskStore, after: int | None = None) -> Events:
    """The task as it is when iteration begins, then every event of its run here (after
    the cursor ``after``, the logged ones first).

    The snapshot and the listening begin together, so no event is missed; and nothing is
    held until then, nor once the stream ends.
    """
    receive = run.listen()
    try:
        first = StreamResponse(task=snapshot(run.task))
        logged = [] if after is None else await store.events_after(run.task.id, after)
        async for event in events_of(first, receive, logged, after):
            yield event
    finally:
        run.unlisten(receive)


async def events_of(
    first: StreamResponse, receive: Receiving, logged: Sequence[Numbered] = (), after: int | None = None
) -> Events:
    """``first``, the ``logged`` events, then what ``receive`` brings until it closes (a
    numbered event only if numbered after the last one given); ``None`` after each quiet spell."""
    yield first
    last = after or 0
    for numbered in logged:
        last = numbered.seq
        yield numbered
    async with receive:
        while True:
            with anyio.move_on_after(KEEPALIVE) as quiet:
                try:
                    event: Event = await receive.receive()
                except anyio.EndOfStream:
                    return
            if quiet.cancelled_caught:
                yield None
            elif not isinstance(event, Numbered):
                yield event
            elif event.seq > last:
                last = event.seq
                yield event


async def follow_elsewhere(
    store: TaskStore,
    stored: StoredTask,
    owned: Callable[[str], Awaitable[StoredTask]],
    after: int | None = None,
) -> Events:
    """The task now, then the events another replica logs (after the cursor ``after``, the
    logged ones first), until it ends.

    While nothing comes, the task is read again every second: it may have ended unseen,
    or its replica may have gone (``owned`` fails or adopts such a task and returns it).
    """
    task_id = stored.task.id
    async with store.listen(store.events_channel(task_id)) as pubsub:
        latest = await store.load(task_id) or stored
        yield StreamResponse(task=latest.task)
        last = after or 0
        if after is not None:
            for numbered in await store.events_after(task_id, after):
                last = numbered.seq
                yield numbered
                if _ends(numbered):
                    return
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
            heard = store.decode_event(msg.get("data"))
            if heard is None or heard.seq <= last:
                continue
            last = heard.seq
            yield heard
            if _ends(heard):
                return


def _ends(numbered: Numbered) -> bool:
    update = numbered.event.status_update
    return update is not None and is_final(update.status.state)
