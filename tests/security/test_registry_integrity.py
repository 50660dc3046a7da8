"""The registry under the generated Redis ACL: no agent can write, replace or impersonate another's entries.

A real redis-server runs the ACL file ``a2a redis-config`` generates; every registry
(agent, client, admin) connects as its own user.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis
import redis.exceptions

from a2a.stores.history import HistoryStore
from bus.errors import Unavailable
from bus.handoff import ChatMessage
from discovery import InstanceState, LocalView, Registry
from discovery._beats import VERIFY_EVERY
from discovery._scripts import FUNCTIONS
from discovery.errors import AccessDenied
from tests.security.redis_acl import (
    NAMESPACE,
    AclServer,
    acl_server,
    admin,
    instance,
    profile,
    ready,
    until,
)

__all__ = ["acl_server", "admin"]  # fixtures used here

pytestmark = pytest.mark.anyio


@pytest.fixture
async def writer(acl_server: AclServer) -> AsyncIterator[Registry]:
    registry = acl_server.registry("writer")
    yield registry
    await registry.aclose()


@pytest.fixture
async def reader(acl_server: AclServer) -> AsyncIterator[Registry]:
    registry = acl_server.registry("reader")
    yield registry
    await registry.aclose()


@pytest.fixture
async def client(acl_server: AclServer) -> AsyncIterator[Registry]:
    registry = acl_server.registry("client")
    yield registry
    await registry.aclose()


async def test_an_agent_cannot_touch_another_agents_entries_nor_run_dangerous_commands(
    admin: Registry, writer: Registry, reader: Registry
) -> None:
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await writer.register(honest)
    key = reader.keys.instance(honest.agent_id)
    with pytest.raises(redis.exceptions.NoPermissionError):
        await reader.redis.hset(key, "profile", "{}")
    with pytest.raises(redis.exceptions.NoPermissionError):
        await reader.redis.delete(key)
    with pytest.raises(Unavailable, match=r"(?i)permission"):  # a new id in the writer's name
        await reader.register(profile(instance("writer"), {"code.edit": 1.0}))
    with pytest.raises(Unavailable, match=r"(?i)permission"):  # replacing the writer's instance
        await reader.register(profile(honest.agent_id, {"code.edit": 1.0}))
    with pytest.raises(Unavailable, match=r"(?i)permission"):
        await reader.deregister(honest.agent_id)
    # Calling the registry's functions by hand changes nothing: Redis checks the caller's
    # rights on every key a function touches.
    keys = [key, reader.keys.instances, reader.keys.capsof]
    with pytest.raises(redis.exceptions.ResponseError, match=r"(?i)permission|can.t access"):
        await reader.redis.fcall(FUNCTIONS["deregister"], 3, *keys, reader.keys.prefix, honest.agent_id)
    # An agent whose name is another's plus "-suffix" owns none of the other's hashes.
    with pytest.raises(redis.exceptions.NoPermissionError):
        await writer.redis.hset(writer.keys.instance(instance("writer-bot")), "profile", "{}")
    with pytest.raises(Unavailable, match=r"(?i)permission"):
        await writer.register(profile(instance("writer-bot"), {"code.edit": 1.0}))
    for command in (
        ("FLUSHALL",),
        ("FLUSHDB",),
        ("CONFIG", "GET", "*"),
        ("KEYS", "*"),
        ("SCAN", "0"),
        ("MODULE", "LIST"),
        ("CLIENT", "LIST"),
        ("SCRIPT", "FLUSH"),
        ("ACL", "LIST"),
        ("EVAL", "return 1", "0"),
        ("SHUTDOWN",),
    ):
        with pytest.raises(redis.exceptions.NoPermissionError):
            await reader.redis.execute_command(*command)  # type: ignore[no-untyped-call]
    assert await admin.get(honest.agent_id) == await writer.get(honest.agent_id) is not None
    assert [p.agent_id for p in await admin.list_agents()] == [honest.agent_id]


async def test_honest_agents_and_clients_work_under_the_acl(
    admin: Registry, writer: Registry, reader: Registry, client: Registry
) -> None:
    view = LocalView(client)  # a client's view: reads and subscribes, never writes
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        w = profile(instance("writer"), {"code.edit": 0.9, "code.read": 0.5})
        r = profile(instance("reader"), {"code.read": 0.8})
        await writer.register(w)
        await reader.register(r)
        assert await writer.heartbeat([InstanceState(w.agent_id, "busy", 4, 4)]) == []
        assert await reader.heartbeat([InstanceState(r.agent_id, "available", 1, 4)]) == []
        assert {p.agent_id for p in await client.list_agents()} == {w.agent_id, r.agent_id}
        best = await client.find_best_agent(["code.read"])
        assert best is not None and best.agent_id == r.agent_id  # the writer is busy
        found = await client.find_agents_with_capability("code.read")
        assert [p.agent_id for p in found] == [r.agent_id]
        await until(lambda: _status(view, w.agent_id) == "busy" and view.get(r.agent_id) is not None)
        chosen = view.best(["code.read"])
        assert chosen is not None and chosen.agent_id == r.agent_id
        await reader.deregister(r.agent_id)
        await until(lambda: view.get(r.agent_id) is None)
        # The writer stops heartbeating: its hash expires, and another agent's sweep prunes the indexes.
        await anyio.sleep(writer.ttl + 0.2)
        assert await reader.sweep() == 1
        with pytest.raises(AccessDenied, match=r"(?i)permission"):
            await client.sweep()  # clients only read the registry
        with pytest.raises(AccessDenied):  # so a client's view tries the sweeper once a minute only
            await client.expire_due(view.sweeper_id, client.ttl)
        await until(lambda: view.get(w.agent_id) is None)
        tg.cancel_scope.cancel()
    assert client.rejected == view.rejected == 0
    # History: agents and clients keep conversations.
    for registry in (writer, client):
        history = HistoryStore(registry.redis, NAMESPACE)
        conversation = instance("conv")
        await history.claim(conversation, "user-1")
        await history.append(conversation, ChatMessage(role="user", content="hello"))
        assert [m.content for m in await history.messages(conversation)] == ["hello"]
        assert await history.start_objective(conversation, "r1", 1000) is None


def _status(view: LocalView, agent_id: str) -> str | None:
    entry = view.get(agent_id)
    return entry.profile.status if entry is not None else None


def _caps(registry: Registry) -> Callable[[str], str]:
    return registry.keys.capability


# How the holder of an instance's hash (its agent's user, or the admin) may alter it.
TAMPERING: dict[str, Callable[[aioredis.Redis, Registry, str], Any]] = {
    "profile garbage": lambda r, reg, key: r.hset(key, "profile", "garbage"),
    "caps deleted": lambda r, reg, key: r.hdel(key, "caps"),
    "caps replaced": lambda r, reg, key: r.hset(key, "caps", '{"code.edit": 0.1, "evil": 1}'),
    "caps not JSON": lambda r, reg, key: r.hset(key, "caps", "[[["),
    "name changed": lambda r, reg, key: r.hset(key, "name", "reader"),
    "status garbage": lambda r, reg, key: r.hset(key, "status", "hacked"),
    "profile swapped": lambda r, reg, key: r.hset(
        key, "profile", msgspec.json.encode(profile(key.rsplit(":", 1)[1], {"code.edit": 0.01}))
    ),
    "index entry removed": lambda r, reg, key: r.zrem(
        reg.keys.capability("code.edit"), key.rsplit(":", 1)[1]
    ),
}


@pytest.mark.parametrize("tamper", TAMPERING)
async def test_heartbeats_restore_an_altered_instance_within_one_verification_cycle(
    tamper: str, admin: Registry, writer: Registry, client: Registry
) -> None:
    w = profile(instance("writer"), {"code.edit": 0.9})
    state = InstanceState(w.agent_id, "available", 0, 4)
    await writer.register(w)
    expected = await writer.get(w.agent_id)
    assert expected is not None
    await TAMPERING[tamper](admin.redis, admin, admin.keys.instance(w.agent_id))
    # Heartbeats, as Presence runs them: re-register whatever the registry reports lost. Most
    # beats only push the expiry; one in VERIFY_EVERY checks the hash and finds the change.
    for _ in range(VERIFY_EVERY):
        for agent_id in await writer.heartbeat([state]):
            assert agent_id == w.agent_id
            await writer.register(w)
    restored = await client.get(w.agent_id)
    assert restored is not None
    assert restored.proficiencies() == {"code.edit": 0.9} and restored.name == "writer"
    assert restored.status == "available"
    best = await client.find_best_agent(["code.edit"])
    assert best is not None and best.agent_id == w.agent_id and best.score == pytest.approx(0.9)
    assert [p.agent_id for p in await client.find_agents_with_capability("code.edit")] == [w.agent_id]
    assert await client.find_best_agent(["evil"]) is None


async def test_a_view_refuses_an_instance_claiming_another_agents_name(
    admin: Registry, writer: Registry, reader: Registry, client: Registry
) -> None:
    honest = profile(instance("reader"), {"code.read": 0.8})
    await reader.register(honest)
    view = LocalView(client)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        await until(lambda: view.get(honest.agent_id) is not None)
        # The writer's user may write hashes of writer-* ids: it makes one that says it is a reader,
        # and one that carries the honest reader's own id in its profile.
        ids = [instance("writer"), instance("writer")]
        fakes = [
            profile(ids[0], {"code.read": 1.0}, name="reader"),
            msgspec.structs.replace(honest, capabilities=profile("x", {"code.read": 1.0}).capabilities),
        ]
        for fake_id, fake in zip(ids, fakes, strict=True):
            key = writer.keys.instance(fake_id)
            fields: dict[Any, Any] = {"name": "writer", "status": "available"}
            fields.update({"load": 0, "capacity": 4, "lastSeen": 1, "profile": msgspec.json.encode(fake)})
            await writer.redis.hset(key, mapping=fields)
            await writer.redis.sadd(writer.keys.instances, fake_id)
            await writer.redis.publish(writer.keys.events, msgspec.json.encode({"e": "reg", "id": fake_id}))
        await until(lambda: client.rejects.by_kind == {"name": 1, "id": 1})
        chosen = view.best(["code.read"])
        assert chosen is not None and chosen.agent_id == honest.agent_id
        assert [e.agent_id for e in view.entries()] == [honest.agent_id]
        assert [p.agent_id for p in await client.list_agents()] == [honest.agent_id]
        tg.cancel_scope.cancel()


async def test_a_dropped_instance_stays_out_of_the_view_for_the_registry_ttl(
    writer: Registry, reader: Registry, client: Registry
) -> None:
    w = profile(instance("writer"), {"code.edit": 0.9})
    await writer.register(w)
    view = LocalView(client)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        await until(lambda: view.get(w.agent_id) is not None)
        dropped_at = anyio.current_time()
        view.drop(w.agent_id)  # say it answered NO_RESPONDERS
        # Heartbeats, (forged) registrations and a resync all name it: none brings it back yet.
        await writer.heartbeat([InstanceState(w.agent_id, "available", 0, 4)])
        await reader.redis.publish(reader.keys.events, msgspec.json.encode({"e": "reg", "id": w.agent_id}))
        view.replace_all(await client.list_agents())
        await anyio.sleep(0.2)
        assert view.get(w.agent_id) is None and view.best(["code.edit"]) is None
        # After the quarantine, the next heartbeat makes it routable again.
        while view.get(w.agent_id) is None:
            await writer.heartbeat([InstanceState(w.agent_id, "available", 0, 4)])
            await anyio.sleep(0.1)
        assert anyio.current_time() - dropped_at >= writer.ttl
        assert anyio.current_time() - dropped_at < writer.ttl + 1.0
        tg.cancel_scope.cancel()


async def test_forged_events_are_believed_only_as_the_registry_reads_them(
    writer: Registry, reader: Registry, client: Registry
) -> None:
    w = profile(instance("writer"), {"code.edit": 0.9})
    await writer.register(w)
    view = LocalView(client)
    beat = InstanceState(w.agent_id, "available", 0, 4)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        await until(lambda: view.get(w.agent_id) is not None)
        await writer.heartbeat([beat])
        # Another agent's user may publish on the shared channel: a forged departure is checked
        # against the registry first (the instance's hash lives), so the entry never leaves.
        await reader.redis.publish(reader.keys.events, msgspec.json.encode({"e": "down", "id": w.agent_id}))
        with anyio.move_on_after(0.5):
            while view.best(["code.edit"]) is not None:
                await anyio.sleep(0.005)
        assert view.best(["code.edit"]) is not None
        # A forged heartbeat saying it is busy is read back before it is believed: never applied.
        await writer.heartbeat([beat])  # (the instance lives on: its ttl is 0.9 s)
        forged = {"e": "st", "id": w.agent_id, "status": "busy", "load": 4, "capacity": 4}
        await reader.redis.publish(reader.keys.events, msgspec.json.encode(forged))
        with anyio.move_on_after(0.5):
            while _status(view, w.agent_id) == "available":
                await anyio.sleep(0.005)
        assert _status(view, w.agent_id) == "available"
        await writer.heartbeat([InstanceState(w.agent_id, "busy", 4, 4)])  # a real change arrives
        await until(lambda: _status(view, w.agent_id) == "busy", timeout=1.0)
        tg.cancel_scope.cancel()
