"""The roster's grants as they change, under the generated Redis ACL: views follow the grants an
admin loads, whoever keeps an instance alive, and instances refused for a count come back.

Registries here read the grants again after ``GRANTS_REFRESH`` (shortened to a second).
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from discovery import AgentProfile, InstanceState, LocalView, Registry
from discovery.errors import RegistrationRefused
from tests.security.redis_acl import AclServer, acl_server, admin, instance, profile, ready, until

__all__ = ["acl_server", "admin"]  # fixtures used here

pytestmark = pytest.mark.anyio

INTERVAL = 0.3
WRITER = {"capabilities": ["code.edit", "code.write"], "maxInstances": 4}


async def grant(admin: Registry, **grants: dict[str, Any]) -> None:
    """What ``a2a redis-config --load`` writes: the whole hash at once, as the admin."""
    async with admin.redis.pipeline(transaction=True) as pipe:
        pipe.delete(admin.keys.grants)
        pipe.hset(admin.keys.grants, mapping={a.replace("_", "-"): json.dumps(g) for a, g in grants.items()})
        await pipe.execute()


@pytest.fixture(autouse=True)
def quick_grants(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("discovery._calls.GRANTS_REFRESH", 1.0)


@pytest.fixture
async def registries(acl_server: AclServer, admin: Registry) -> AsyncIterator[dict[str, Registry]]:
    await grant(admin, writer=WRITER, reader={"capabilities": ["code.read"]})
    made = {user: acl_server.registry(user) for user in ("writer", "reader", "client")}
    yield made
    for registry in made.values():
        await registry.aclose()


async def presence(registry: Registry, instance: AgentProfile, *, status: list[str] | None = None) -> None:
    """An instance's runtime, as ``a2a.core.presence`` runs it: beats, re-registers what Redis lost."""
    state = status or ["available"]
    while True:
        lost = await registry.heartbeat([InstanceState(instance.agent_id, state[0], 0, 4)])  # type: ignore[arg-type]
        if lost:
            with contextlib.suppress(RegistrationRefused):
                await registry.register(instance)
        await anyio.sleep(INTERVAL)


async def test_a_narrowed_grant_takes_running_instances_out_of_every_view(
    acl_server: AclServer, admin: Registry, registries: dict[str, Registry]
) -> None:
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await registries["writer"].register(honest)
    # A compromised reader granted code.edit for a while, then revoked: it keeps its hash alive
    # by hand (its ACL lets it push its own hashes' expiry).
    await grant(admin, writer=WRITER, reader={"capabilities": ["code.read", "code.edit"]})
    rogue = profile(instance("reader"), {"code.edit": 1.0})
    await registries["reader"].register(rogue)
    raw = aioredis.Redis.from_url(acl_server.url("reader"))
    view = LocalView(registries["client"])
    async with anyio.create_task_group() as tg:
        tg.start_soon(presence, registries["writer"], honest)
        await tg.start(view.run)
        await ready(view)
        await until(lambda: view.get(rogue.agent_id) is not None and view.get(honest.agent_id) is not None)

        async def keep_alive() -> None:
            while True:
                await raw.pexpire(registries["reader"].keys.instance(rogue.agent_id), 5000)
                await anyio.sleep(INTERVAL)

        tg.start_soon(keep_alive)
        await grant(admin, writer={"capabilities": ["code.write"]}, reader={"capabilities": ["code.read"]})
        await until(lambda: view.get(rogue.agent_id) is None and view.get(honest.agent_id) is None, timeout=4)
        assert view.best(["code.edit"]) is None
        # The honest instance is refused on its next full beat and its hash lapses: gone for every
        # reader, views started later included.
        with anyio.fail_after(6):
            while await admin.redis.exists(admin.keys.instance(honest.agent_id)):
                await anyio.sleep(0.1)
        assert await registries["client"].find_best_agent(["code.edit"]) is None
        tg.cancel_scope.cancel()
    await raw.aclose()


async def test_an_instance_granted_just_now_is_seen_within_seconds(
    admin: Registry, registries: dict[str, Registry]
) -> None:
    view = LocalView(registries["client"])
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        await registries["client"].grants()  # read before the grant widens
        await grant(admin, writer=WRITER, reader={"capabilities": ["code.read", "code.review"]})
        new = profile(instance("reader"), {"code.review": 0.8})
        await registries["reader"].register(new)
        tg.start_soon(presence, registries["reader"], new)
        started = anyio.current_time()
        await until(lambda: view.get(new.agent_id) is not None, timeout=4)
        took = anyio.current_time() - started
        tg.cancel_scope.cancel()
    assert took < 2.5, took


async def test_an_instance_refused_for_its_agents_count_enters_when_a_place_frees(
    admin: Registry, registries: dict[str, Registry]
) -> None:
    await grant(admin, writer={**WRITER, "maxInstances": 1})
    first = profile(instance("writer"), {"code.edit": 0.9})
    await registries["writer"].register(first)
    view = LocalView(registries["client"])
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        async with anyio.create_task_group() as first_runs:
            first_runs.start_soon(presence, registries["writer"], first)
            await until(lambda: view.get(first.agent_id) is not None)
            # Its replacement is announced before the first one's departure (as when the first
            # died and its expiry is announced late): written by the admin around the count.
            second = profile(instance("writer"), {"code.edit": 0.9})
            await grant(admin, writer={**WRITER, "maxInstances": 2})
            await admin.register(second)
            tg.start_soon(presence, admin, second)
            await grant(admin, writer={**WRITER, "maxInstances": 1})
            await anyio.sleep(2 * INTERVAL)
            assert view.get(second.agent_id) is None  # over the count: not admitted
            first_runs.cancel_scope.cancel()
        await registries["writer"].deregister(first.agent_id)
        await until(lambda: view.get(second.agent_id) is not None, timeout=4 * INTERVAL + 1.5)
        tg.cancel_scope.cancel()


async def test_an_instance_taken_out_of_the_listing_returns_to_views_started_since(
    acl_server: AclServer, registries: dict[str, Registry]
) -> None:
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await registries["writer"].register(honest)
    raw = aioredis.Redis.from_url(acl_server.url("reader"))
    assert await raw.srem(registries["reader"].keys.instances, honest.agent_id) == 1
    view = LocalView(registries["client"])
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await ready(view)
        assert view.get(honest.agent_id) is None  # the snapshot lacked it
        # Its runtime beats from now on (started earlier, a full beat could relist it before
        # the snapshot was taken).
        tg.start_soon(presence, registries["writer"], honest)
        await until(lambda: view.get(honest.agent_id) is not None, timeout=12 * INTERVAL + 1)  # a full beat
        tg.cancel_scope.cancel()
    await raw.aclose()


async def test_a_flood_of_events_delays_a_real_change_by_about_an_interval_at_most(
    acl_server: AclServer, registries: dict[str, Registry]
) -> None:
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await registries["writer"].register(honest)
    raw = aioredis.Redis.from_url(acl_server.url("reader"))
    channel = registries["reader"].keys.events
    # A read budget the flood surely exceeds, however fast this machine reads.
    view = LocalView(registries["client"], read_budget=100)
    status = ["available"]
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(presence, registries["writer"], honest, status=status))
        await tg.start(view.run)
        await ready(view)
        await until(lambda: view.get(honest.agent_id) is not None)

        async def flood() -> None:  # fresh ids, each a read if nothing bounded them
            while True:
                async with raw.pipeline(transaction=False) as pipe:
                    for _ in range(200):
                        pipe.publish(
                            channel, json.dumps({"e": "reg", "id": f"writer-{random.getrandbits(32):08x}"})
                        )
                    await pipe.execute()
                await anyio.sleep(0.02)

        tg.start_soon(flood)
        await anyio.sleep(3 * INTERVAL)
        status[0] = "busy"
        started = anyio.current_time()
        await until(lambda: view.get(honest.agent_id).profile.status == "busy", timeout=5)  # type: ignore[union-attr]
        took = anyio.current_time() - started
        tg.cancel_scope.cancel()
    await raw.aclose()
    assert view.rejected > 0  # the flood was noticed
    assert took < 4 * INTERVAL + 0.5, took


async def test_a_capability_its_agent_may_not_advertise_counts_as_missing_in_a_search(
    admin: Registry, registries: dict[str, Registry]
) -> None:
    honest = profile(instance("writer"), {"code.edit": 0.9})
    await registries["writer"].register(honest)
    found = await registries["client"].find_best_agent(["code.edit", "code.review"])
    assert found is not None and found.agent_id == honest.agent_id and found.score == pytest.approx(0.45)
