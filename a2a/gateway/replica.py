"""What keeps a gateway replica known to the others: its heartbeat, and the cancels they send it."""

from __future__ import annotations

import logging

import anyio

from bus.errors import Unavailable
from discovery.errors import redis_errors

from .runs import Run
from .tasks import TaskStore

__all__ = ["follow_cancels", "heartbeat"]

log = logging.getLogger("a2a.gateway")


async def heartbeat(store: TaskStore, replica: str, ttl: float) -> None:
    """Keep ``replica`` alive in Redis (a third of ``ttl`` apart), forever."""
    while True:
        await anyio.sleep(ttl / 3)
        try:
            await store.alive(replica, ttl)
        except Unavailable as exc:
            log.warning("gateway heartbeat failed: %s", exc)


async def follow_cancels(store: TaskStore, runs: dict[str, Run]) -> None:
    """Cancel the runs here whose tasks another replica was asked to cancel, forever."""
    while True:
        try:
            async with store.listen(store.cancel_channel) as pubsub:
                while True:
                    with redis_errors("cancel requests"):
                        msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if msg is None:
                        continue
                    data = msg.get("data")
                    task_id = data.decode(errors="replace") if isinstance(data, bytes) else str(data)
                    run = runs.get(task_id)
                    if run is not None:
                        run.reason = "cancelled by the client"
                        run.scope.cancel()
        except Unavailable as exc:
            log.warning("cancel requests lost (%s); retrying", exc)
            await anyio.sleep(1.0)
