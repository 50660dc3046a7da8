"""What a compromised agent can claim in the registry, under the generated NATS permissions and Redis ACL.

Two attacks by the user of agent ``reader``, which may publish on the registry's events
channel and write its own instance hashes:

* forged state events about another agent's idle instance (trust 0, busy, offline, another
  capacity, a false load), once or as a flood: routing by capability must not notice, in a
  view alone or in a runtime's real calls by capability;
* instances of its own claiming a capability the roster does not grant it (``code.edit``
  at 1.0), with a NATS subscription on their subjects: no call may reach them.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import nats
import pytest
import redis.asyncio as aioredis

from a2a import Agent, AgentCapability, Context, Runtime, by_capability
from a2a.errors import NoCapableAgent
from discovery import InstanceState, LocalView, Registry
from discovery.errors import RegistrationRefused
from tests.security.conftest import as_user, password
from tests.security.redis_acl import AclServer, acl_server, admin, instance, profile, ready, until

__all__ = ["acl_server", "admin"]  # fixtures used here

pytestmark = pytest.mark.anyio

INTERVAL = 0.3
GRANTS = {
    "writer": {"capabilities": ["code.edit", "code.write"], "maxInstances": 4},
    "reader": {"capabilities": ["code.read"], "maxInstances": 2},
    "writer-bot": {"capabilities": ["code.read"]},
}


async def grant(admin: Registry) -> None:
    """What ``a2a redis-config --load`` writes from a roster: only the admin may."""
    await admin.redis.delete(admin.keys.grants)
    await admin.redis.hset(admin.keys.grants, mapping={a: json.dumps(g) for a, g in GRANTS.items()})


@pytest.fixture
async def registries(acl_server: AclServer, admin: Registry) -> AsyncIterator[dict[str, Registry]]:
    await grant(admin)
    made = {user: acl_server.registry(user) for user in ("writer", "reader", "client")}
    yield made
    for registry in made.values():
        await registry.aclose()


async def beating(registry: Registry, agent_id: str) -> None:
    """An idle instance's heartbeats: nothing changes, so nothing is published."""
    while True:
        await registry.heartbeat([InstanceState(agent_id, "available", 0, 4)])
        await anyio.sleep(INTERVAL)


def forged_states(agent_id: str) -> list[dict[str, Any]]:
    base = {"e": "st", "id": agent_id, "status": "available", "load": 0, "capacity": 4, "ts": 1}
    return [
        {**base, "trust": 0.0},
        {**base, "status": "busy", "load": 4},
        {**base, "status": "offline"},
        {**base, "capacity": 1},
        {**base, "capacity": 0},
        {**base, "trust": 0.1, "status": "busy"},
    ]


async def test_forged_state_events_do_not_take_an_idle_instance_out_of_routing(
    acl_server: AclServer, registries: dict[str, Registry]
) -> None:
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await registries["writer"].register(honest)
    attacker = aioredis.Redis.from_url(acl_server.url("reader"))
    channel = registries["reader"].keys.events
    view = LocalView(registries["client"])
    checked = missed = 0
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        tg.start_soon(beating, registries["writer"], honest.agent_id)
        await until(lambda: view.get(honest.agent_id) is not None)
        forged = forged_states(honest.agent_id)
        for event in forged:  # one of each ...
            await attacker.publish(channel, json.dumps(event))
        with anyio.move_on_after(3 * INTERVAL * 4):  # ... then a flood, for four ttls
            while True:
                await attacker.publish(channel, json.dumps(random.choice(forged)))
                for _ in range(3):
                    await anyio.sleep(0.005)
                    entry = view.best(["code.edit"])
                    checked += 1
                    missed += entry is None or entry.agent_id != honest.agent_id
        found = await registries["client"].find_best_agent(["code.edit"])
        tg.cancel_scope.cancel()
    await attacker.aclose()
    assert checked > 100
    assert missed == 0, f"{missed} of {checked} routing choices missed the idle instance"
    assert found is not None and found.agent_id == honest.agent_id


async def test_a_forged_load_on_an_idle_instance_is_undone_within_one_interval(
    acl_server: AclServer, registries: dict[str, Registry]
) -> None:
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await registries["writer"].register(honest)
    attacker = aioredis.Redis.from_url(acl_server.url("reader"))
    view = LocalView(registries["client"])
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        tg.start_soon(beating, registries["writer"], honest.agent_id)
        await until(lambda: view.get(honest.agent_id) is not None)
        event = {**forged_states(honest.agent_id)[0], "load": 3}
        del event["trust"]
        await attacker.publish(registries["reader"].keys.events, json.dumps(event))
        await until(lambda: view.get(honest.agent_id).profile.load == 3)  # type: ignore[union-attr]
        started = anyio.current_time()
        await until(lambda: view.get(honest.agent_id).profile.load == 0)  # type: ignore[union-attr]
        took = anyio.current_time() - started
        tg.cancel_scope.cancel()
    await attacker.aclose()
    assert took < 2 * INTERVAL + 0.3, f"the forged load stayed {took:.2f} s"


async def test_an_agent_cannot_advertise_what_the_roster_does_not_grant_it(
    acl_server: AclServer, registries: dict[str, Registry]
) -> None:
    reader, client = registries["reader"], registries["client"]
    with pytest.raises(RegistrationRefused, match=r"does not let agent reader advertise code\.edit"):
        await reader.register(profile(instance("reader"), {"code.edit": 1.0}))
    # Written by hand, as the ACL lets the reader's user write its own hashes and the indexes:
    # views and the server-side search ignore it.
    fake = profile(instance("reader"), {"code.edit": 1.0})
    raw = aioredis.Redis.from_url(acl_server.url("reader"))
    key = reader.keys.instance(fake.agent_id)
    await raw.hset(
        key,
        mapping={
            "name": "reader",
            "status": "available",
            "load": 0,
            "capacity": 4,
            "lastSeen": 1,
            "profile": json.dumps(
                {
                    "agentId": fake.agent_id,
                    "name": "reader",
                    "capabilities": [{"id": "code.edit", "proficiency": 1.0}],
                }
            ),
            "caps": json.dumps({"code.edit": 1.0}),
        },
    )
    await raw.zadd(reader.keys.capability("code.edit"), {fake.agent_id: 1.0})
    await raw.sadd(reader.keys.instances, fake.agent_id)
    await raw.publish(reader.keys.events, json.dumps({"e": "reg", "id": fake.agent_id}))
    honest = profile(instance("writer"), {"code.edit": 0.5})
    await registries["writer"].register(honest)
    view = LocalView(client)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        await until(lambda: view.get(honest.agent_id) is not None)
        await anyio.sleep(INTERVAL)
        assert view.get(fake.agent_id) is None
        entry = view.best(["code.edit"])
        assert entry is not None and entry.agent_id == honest.agent_id
        tg.cancel_scope.cancel()
    found = await client.find_best_agent(["code.edit"])
    assert found is not None and found.agent_id == honest.agent_id
    assert [p.agent_id for p in await client.find_agents_with_capability("code.edit")] == [honest.agent_id]
    assert await client.get(fake.agent_id) is None
    assert client.rejected >= 1
    # What it is granted it may advertise, up to its number of instances.
    granted = [profile(instance("reader"), {"code.read": 0.5}) for _ in range(3)]
    await reader.register_many(granted[:2])
    with pytest.raises(RegistrationRefused, match="2 instances"):
        await reader.register(granted[2])
    await reader.deregister(granted[0].agent_id)
    await reader.register(granted[2])  # a slot freed
    # Nor may it write the grants, nor count another agent's instances.
    with pytest.raises(Exception, match=r"(?i)permission"):
        await raw.hset(reader.keys.grants, "reader", json.dumps({"capabilities": ["code.edit"]}))
    with pytest.raises(Exception, match=r"(?i)permission"):
        await raw.zadd(reader.keys.agent_instances("writer"), {"writer-00000000": 0})
    await raw.aclose()


coder = Agent("writer", capabilities=[AgentCapability(id="code.edit", proficiency=0.6)])


@coder.action("edit")
async def _edit(ctx: Context, params: dict[str, Any]) -> Any:
    return {"by": ctx.instance_id, "params": params}


async def test_a_compromised_agent_cannot_take_over_a_capability(
    secured_nats: str, acl_server: AclServer, registries: dict[str, Registry]
) -> None:
    """The attack end to end: reader's Redis user plants instances claiming ``code.edit`` at
    1.0 and its NATS user listens on their subjects; a client calls by capability."""
    reader = registries["reader"]
    fakes = [profile(instance("reader"), {"code.edit": 1.0}) for _ in range(2)]
    raw = aioredis.Redis.from_url(acl_server.url("reader"))
    for fake in fakes:
        body = {
            "agentId": fake.agent_id,
            "name": "reader",
            "capabilities": [{"id": "code.edit", "proficiency": 1.0}],
        }
        await raw.hset(
            reader.keys.instance(fake.agent_id),
            mapping={
                "name": "reader",
                "status": "available",
                "load": 0,
                "capacity": 8,
                "lastSeen": 1,
                "profile": json.dumps(body),
                "caps": json.dumps({"code.edit": 1.0}),
            },
        )
        await raw.zadd(reader.keys.capability("code.edit"), {fake.agent_id: 1.0})
        await raw.sadd(reader.keys.instances, fake.agent_id)
    stolen: list[bytes] = []
    spy = await nats.connect(secured_nats, user="reader", password=password("reader"))

    async def keep(msg: Any) -> None:
        stolen.append(msg.data)

    for fake in fakes:
        await spy.subscribe(f"a2a.sec.inst.reader.{fake.agent_id}.>", cb=keep)
    await spy.flush()
    outcomes = {"ok": 0, "other": 0}
    extra = {"heartbeat_interval": INTERVAL}
    async with (
        Runtime(as_user(secured_nats, "writer", redis_url=acl_server.url("writer"), **extra)) as callee,
        Runtime(as_user(secured_nats, "client", redis_url=acl_server.url("client"), **extra)) as client,
    ):
        (host,) = await callee.serve(coder)
        await client.wait_for_agents(["writer"])
        for fake in fakes:  # announced after the client's view loaded: read back and refused
            await raw.publish(reader.keys.events, json.dumps({"e": "reg", "id": fake.agent_id}))
        for i in range(48):
            try:
                out = await client.call(by_capability("code.edit"), "edit", {"n": i}, timeout=2)
                outcomes["ok" if out["by"] == host.instance_id else "other"] += 1
            except Exception:
                outcomes["other"] += 1
    await spy.close()
    await raw.aclose()
    assert stolen == []
    assert outcomes == {"ok": 48, "other": 0}


FLOOD = 3.0
"""Seconds the forged events are published for: ten heartbeat intervals."""


async def test_a_flood_of_forged_state_events_does_not_stop_calls_by_capability(
    secured_nats: str, acl_server: AclServer, registries: dict[str, Registry]
) -> None:
    """End to end: writer's instance serves ``code.edit`` and sits idle between calls; reader's
    Redis user floods the events channel with state events that take it out of routing
    (trust 0, busy, offline, capacity 0) while a client keeps calling by capability."""
    attacker = aioredis.Redis.from_url(acl_server.url("reader"))
    channel = registries["reader"].keys.capability_events("code.edit")  # what the client's view follows
    extra = {"heartbeat_interval": INTERVAL}
    outcomes = {"ok": 0, "no_capable_agent": 0, "other": 0}
    published = 0
    async with (
        Runtime(as_user(secured_nats, "writer", redis_url=acl_server.url("writer"), **extra)) as callee,
        Runtime(as_user(secured_nats, "client", redis_url=acl_server.url("client"), **extra)) as client,
    ):
        (host,) = await callee.serve(coder)
        view = client.view
        assert view is not None
        await ready(view)
        await view.follow(["code.edit"])
        await until(lambda: view.get(host.instance_id) is not None)
        for i in range(3):  # routing works before the attack
            out = await client.call(by_capability("code.edit"), "edit", {"n": i}, timeout=2)
            assert out["by"] == host.instance_id
        real = view.get(host.instance_id)
        assert real is not None
        status, trust, capacity = real.profile.status, real.profile.trust, real.profile.capacity
        assert status == "available" and capacity > 0
        # Each forged event keeps the true load and moves what takes an instance out of
        # routing: its trust under the floor, its status, its capacity.
        base = {"e": "st", "id": host.instance_id, "status": status, "load": 0, "capacity": capacity}
        forged: list[dict[str, Any]] = [
            {**base, "trust": 0.0},
            {**base, "status": "busy", "load": capacity},
            {**base, "status": "offline"},
            {**base, "capacity": 0},
            {**base, "trust": 0.0, "status": "offline", "capacity": 0},
        ]

        async def flood() -> None:
            nonlocal published
            while True:
                event = forged[published % len(forged)]
                await attacker.publish(channel, json.dumps({**event, "ts": time.time()}))
                published += 1
                await anyio.sleep(0.002)

        started = anyio.current_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(flood)
            n = 0
            while anyio.current_time() - started < FLOOD:
                try:
                    out = await client.call(by_capability("code.edit"), "edit", {"n": n}, timeout=2)
                    outcomes["ok" if out["by"] == host.instance_id else "other"] += 1
                except NoCapableAgent:
                    outcomes["no_capable_agent"] += 1
                except Exception:
                    outcomes["other"] += 1
                n += 1
                await anyio.sleep(0.005)  # lets forged events arrive between calls
            tg.cancel_scope.cancel()
        flooded = anyio.current_time() - started
        await anyio.sleep(INTERVAL)  # the view has taken in the last forged events
        after = view.get(host.instance_id)
        stored = await registries["client"].get(host.instance_id)
    await attacker.aclose()
    calls = sum(outcomes.values())
    print(
        f"forged-state flood: {published} events in {flooded:.1f} s; calls by capability "
        f"{outcomes['ok']} ok, {calls - outcomes['ok']} failed "
        f"({outcomes['no_capable_agent']} NO_CAPABLE_AGENT)"
    )
    assert published > 200
    assert calls > 50
    assert outcomes == {"ok": calls, "no_capable_agent": 0, "other": 0}
    # The view holds what the instance itself published, as the registry stores it.
    assert after is not None
    assert (after.profile.status, after.profile.trust, after.profile.capacity) == (status, trust, capacity)
    assert stored is not None
    assert (stored.status, stored.trust, stored.capacity) == (status, trust, capacity)
