"""On a 3-node JetStream cluster, a task stream and bucket made with three replicas keep
them when runtimes open the store (which creates them with one when they are missing)."""

from __future__ import annotations

import uuid

import anyio
import nats
import pytest

from a2a import Runtime, Settings
from a2a.bench.chaos_servers import NatsServers
from a2a.bench.chaos_store import replicate
from bus.subjects import Subjects

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def replicas(settings: Settings) -> dict[str, int]:
    subjects = Subjects(settings.namespace)
    nc = await nats.connect(servers=settings.nats_url.split(","))
    try:
        js = nc.jetstream()
        found = {}
        for name in (subjects.task_stream, f"KV_{subjects.task_bucket}"):
            found[name] = (await js.stream_info(name)).config.num_replicas or 1
        return found
    finally:
        await nc.close()


async def open_twice(settings: Settings) -> tuple[dict[str, int], dict[str, int]]:
    await replicate(settings, 3, [])
    made = await replicas(settings)
    async with Runtime(settings), Runtime(settings):
        pass
    return made, await replicas(settings)


def test_runtimes_opening_an_r3_task_store_leave_it_r3() -> None:
    servers = NatsServers(3)
    try:
        servers.start()
        settings = Settings(
            nats_url=servers.url, redis_url=None, namespace="r3" + uuid.uuid4().hex[:8], tasks=True
        )
        made, after = anyio.run(open_twice, settings)
    finally:
        servers.stop()
    assert set(made.values()) == {3}
    assert after == made
