"""No Redis user but the admin can keep Redis, or every runtime, busy.

Against a real redis-server running the generated ACL: agents and clients run no code of
their own (only the registry's function library, which the admin loads); each function
call does bounded work whatever the shared sets hold; views refuse oversized entries and
read one instance back at most once per heartbeat interval.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis
import redis.exceptions

from a2a.cli.redis_config import cmd_redis_config, load_functions
from bus.errors import Unavailable
from discovery import LIBRARY, AgentCapability, AgentProfile, EntryTooLarge, LocalView, Registry
from tests.security.redis_acl import NAMESPACE, AclServer, acl_server, admin, instance, profile, ready, until

__all__ = ["acl_server", "admin"]  # fixtures used here

pytestmark = pytest.mark.anyio

LOOP = "#!lua name=loop\nredis.register_function('loop', function() while true do end end)"
CODE_OF_ITS_OWN = [
    ("EVAL", "while true do end", "0"),
    ("EVAL_RO", "while true do end", "0"),
    ("EVALSHA", "0" * 40, "0"),
    ("EVALSHA_RO", "0" * 40, "0"),
    ("SCRIPT", "LOAD", "while true do end"),
    ("SCRIPT", "EXISTS", "0" * 40),
    ("FUNCTION", "LOAD", LOOP),
    ("FUNCTION", "LOAD", "REPLACE", LOOP),
    ("FUNCTION", "DELETE", LIBRARY),
    ("FUNCTION", "FLUSH"),
    ("FUNCTION", "RESTORE", "x"),
]
"""What would let a user run code of its own, such as a loop that keeps Redis busy for everyone."""


@pytest.fixture
async def users(acl_server: AclServer) -> AsyncIterator[dict[str, Registry]]:
    """Registries of the writer, reader and client; the writer's entries last a minute without heartbeats."""
    made = {user: acl_server.registry(user) for user in ("reader", "client")}
    made["writer"] = Registry.from_url(acl_server.url("writer"), namespace=NAMESPACE, heartbeat_interval=20)
    yield made
    for registry in made.values():
        await registry.aclose()


async def test_no_agent_or_client_may_run_code_of_its_own(
    acl_server: AclServer, admin: Registry, users: dict[str, Registry]
) -> None:
    for user in ("reader", "client"):
        conn = users[user].redis
        for command in CODE_OF_ITS_OWN:
            with pytest.raises(redis.exceptions.NoPermissionError):
                await conn.execute_command(*command)  # type: ignore[no-untyped-call]
        assert await conn.ping()
    # Clients call only the functions that read.
    client = users["client"]
    with pytest.raises(Unavailable, match=r"(?i)permission"):
        await client.register(profile(instance("writer"), {"x": 1.0}))
    assert await client.list_agents() == []


async def test_without_the_library_agents_are_told_to_load_it_and_the_admin_loads_it(
    acl_server: AclServer, admin: Registry, users: dict[str, Registry], monkeypatch: pytest.MonkeyPatch
) -> None:
    await admin.redis.execute_command("FUNCTION", "DELETE", LIBRARY)  # type: ignore[no-untyped-call]
    try:
        writer = users["writer"]
        honest = profile(instance("writer"), {"code.edit": 0.9})
        with pytest.raises(Unavailable, match=r"redis-config .*--load") as info:
            await writer.register(honest)
        assert LIBRARY in str(info.value)
        with pytest.raises(Unavailable, match=r"redis-config .*--load"):
            await users["client"].list_agents()
        # `a2a redis-config --load`, with REDIS_URL naming the admin.
        monkeypatch.setenv("REDIS_URL", acl_server.url("admin"))
        roster = Path(__file__).with_name("roster.yaml")
        args = argparse.Namespace(roster=str(roster), namespace=NAMESPACE, client=None, out=None, load=True)
        assert await anyio.to_thread.run_sync(cmd_redis_config, args) == 0
        await writer.register(honest)
        assert [p.agent_id for p in await users["client"].list_agents()] == [honest.agent_id]
    finally:
        await load_functions(acl_server.url("admin"))


async def test_an_open_server_gets_the_library_on_first_use(redis_url: str, namespace: str) -> None:
    registry = Registry.from_url(redis_url, namespace=namespace)
    try:
        await registry.redis.execute_command("FUNCTION", "FLUSH")  # type: ignore[no-untyped-call]
        await registry.register(profile("open-1a2b3c4d", {"x": 1.0}))  # the default user may load it
        assert [p.agent_id for p in await registry.list_agents()] == ["open-1a2b3c4d"]
    finally:
        await registry.aclose()


async def worst_latency(conn: aioredis.Redis, work: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """The slowest of PINGs sent every 10 ms by another user while ``work()`` runs, and its result."""
    worst = 0.0
    result: Any = None
    done = anyio.Event()

    async def run() -> None:
        nonlocal result
        result = await work()
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not done.is_set():
            start = time.monotonic()
            await conn.ping()
            worst = max(worst, time.monotonic() - start)
            await anyio.sleep(0.01)
    return worst, result


FAKES = 20_000


async def test_padded_shared_sets_cost_many_short_calls_never_a_long_one(
    admin: Registry, users: dict[str, Registry]
) -> None:
    writer, reader, client = users["writer"], users["reader"], users["client"]
    honest = profile(instance("writer"), {"code.edit": 0.5})
    gone = profile(instance("writer"), {"code.edit": 0.7, "code.read": 0.7})
    await writer.register_many([honest, gone])
    # Any agent may write the shared indexes: 20,000 ids of no instance, 200 of them with a
    # record naming 256 capabilities, and a capability set full of them above the honest one.
    # (Plus the earlier layout's ``capindex``, which an upgraded server may still hold.)
    fakes = [instance("reader") for _ in range(FAKES)]
    for i in range(0, FAKES, 5000):
        await reader.redis.sadd(reader.keys.instances, *fakes[i : i + 5000])
    record = msgspec.json.encode({f"c{j}": 1.0 for j in range(256)})
    await reader.redis.hset(reader.keys.capsof, mapping=dict.fromkeys(fakes[:200], record))
    await reader.redis.zadd(reader.keys.capability("code.edit"), dict.fromkeys(fakes, 1.0))
    await admin.redis.sadd(admin.keys.prefix + "capindex", *[f"c{j}" for j in range(1000)])
    await writer.redis.delete(writer.keys.instance(gone.agent_id))  # as if it expired
    probe = writer.redis

    async def sweep_until_clean() -> int:
        removed = 0
        for _ in range(20):
            removed += await reader.sweep()
            if await admin.redis.scard(admin.keys.instances) == 1:
                break
        return removed

    worst, removed = await worst_latency(probe, sweep_until_clean)
    assert worst < 0.25, f"Redis answered a PING after {worst:.2f} s during sweeps"
    # Every fake was pruned by these sweeps; the expired instance too, unless a view's sweeper
    # got to it first (it is in the expiry set, the fakes are not).
    assert FAKES <= removed <= FAKES + 1
    assert await admin.redis.smembers(admin.keys.instances) == {honest.agent_id}
    assert await admin.redis.zscore(admin.keys.capability("code.read"), gone.agent_id) is None
    # Reads over padded sets: many short calls, and no fake in any answer.
    await reader.redis.sadd(reader.keys.instances, *fakes)
    worst, listed = await worst_latency(probe, client.list_agents)
    assert worst < 0.25 and [p.agent_id for p in listed] == [honest.agent_id]
    worst, found = await worst_latency(probe, lambda: client.find_agents_with_capability("code.edit"))
    assert worst < 0.25 and [p.agent_id for p in found] == [honest.agent_id]
    start = time.monotonic()
    best = await client.find_best_agent(["code.edit"])
    assert time.monotonic() - start < 0.25
    assert best is None or best.agent_id == honest.agent_id  # 20,000 stale entries above it
    assert client.rejected == 0


def huge_profile(agent_id: str, capabilities: int) -> AgentProfile:
    caps = [AgentCapability(id=f"cap.{i}", proficiency=0.5) for i in range(capabilities)]
    return AgentProfile(agent_id=agent_id, name="writer", capabilities=caps, capacity=4)


async def test_a_view_refuses_an_oversized_entry_and_a_flood_of_events_costs_one_read(
    admin: Registry, users: dict[str, Registry]
) -> None:
    writer, client = users["writer"], users["client"]
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await writer.register(honest)
    view = LocalView(client)
    reads: list[str] = []
    get = client.get

    async def counting_get(agent_id: str) -> AgentProfile | None:
        reads.append(agent_id)
        return await get(agent_id)

    client.get = counting_get  # type: ignore[method-assign]
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        # The writer's user writes its own hash: a valid profile of 20,000 capabilities (740 KB).
        fake = instance("writer")
        data = msgspec.json.encode(huge_profile(fake, 20_000))
        fields = {"name": "writer", "status": "available", "load": 0, "capacity": 4, "lastSeen": 1}
        await writer.redis.hset(writer.keys.instance(fake), mapping={**fields, "profile": data, "caps": "{}"})
        await writer.redis.sadd(writer.keys.instances, fake)
        for _ in range(200):
            await writer.redis.publish(writer.keys.events, msgspec.json.encode({"e": "reg", "id": fake}))
        await until(lambda: client.rejects.by_kind.get("size", 0) >= 1)
        await anyio.sleep(2 * client.heartbeat_interval)
        assert view.get(fake) is None
        assert reads.count(fake) <= 2, f"{reads.count(fake)} reads for 200 events"
        assert [p.agent_id for p in await client.list_agents()] == [honest.agent_id]
        # An honest change announced within the interval still arrives, one interval late at most.
        await writer.register(profile(honest.agent_id, {"code.edit": 0.9, "code.read": 0.6}))
        await writer.register(profile(honest.agent_id, {"code.edit": 0.9, "code.read": 0.7}))
        await until(
            lambda: (e := view.get(honest.agent_id)) is not None and e.proficiencies.get("code.read") == 0.7
        )
        tg.cancel_scope.cancel()


async def test_registering_over_the_bounds_fails_before_anything_is_written(
    admin: Registry, users: dict[str, Registry]
) -> None:
    writer = users["writer"]
    agent_id = instance("writer")
    too_large = {
        "capabilities": huge_profile(agent_id, 257),
        "description": msgspec.structs.replace(profile(agent_id, {"x": 1.0}), description="d" * 5000),
        "metadata": msgspec.structs.replace(profile(agent_id, {"x": 1.0}), metadata={"blob": "m" * 20_000}),
    }
    for what, rogue in too_large.items():
        with pytest.raises(EntryTooLarge, match=what):
            await writer.register(rogue)
        with pytest.raises(ValueError):
            await writer.register(rogue)
    assert await admin.redis.exists(admin.keys.instance(agent_id)) == 0
    await writer.register(huge_profile(agent_id, 256))  # the bound itself is fine
    got = await users["client"].get(agent_id)
    assert got is not None and len(got.capabilities) == 256
