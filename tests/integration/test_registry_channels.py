"""Events per capability and per agent: a view hears of the capabilities it routes to, nothing else."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from a2a import Agent, AgentCapability, Context, Runtime, Settings, by_capability
from discovery import InstanceState, LocalView, Registry

from .conftest import REGISTRY_INTERVAL as INTERVAL
from .test_registry import profile

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def _heard(
    registry: Registry,
    channels: list[str],
    seen: dict[str, list[str]],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    pubsub = registry.pubsub()
    await pubsub.subscribe(*channels)
    task_status.started()
    try:
        while True:
            msg = await pubsub.get_message(timeout=0.05)
            if msg is not None:
                event = msgspec.json.decode(msg["data"])
                seen[msg["channel"].decode()].append(f"{event['e']} {event['id']}")
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]


async def test_each_event_goes_to_its_capabilities_and_its_agent_channels(registry: Registry) -> None:
    keys = registry.keys
    channels = [keys.capability_events("a"), keys.capability_events("c"), keys.agent_events("w"), keys.events]
    seen: dict[str, list[str]] = {c: [] for c in channels}
    async with anyio.create_task_group() as tg:
        await tg.start(_heard, registry, channels, seen)
        await registry.register(profile("w-1", {"a": 0.5, "b": 0.5}, capacity=1))
        await registry.heartbeat([InstanceState("w-1", "busy", 1, 1)])
        await registry.heartbeat([InstanceState("w-1", "available", 0, 1)])
        await registry.deregister("w-1")
        await registry.register(profile("w-2", {"a": 0.5}, capacity=1))  # and never beats: expires
        with anyio.fail_after(3 * registry.ttl):
            while True:
                await registry.expire_due("sweeper", registry.ttl)
                if "down w-2" in seen[keys.events]:
                    break
                await anyio.sleep(INTERVAL / 4)
        await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    expected = ["reg w-1", "st w-1", "st w-1", "down w-1", "reg w-2", "down w-2"]
    assert seen[keys.events] == expected
    assert seen[keys.capability_events("a")] == expected
    assert seen[keys.agent_events("w")] == expected
    assert seen[keys.capability_events("c")] == []


def _agent(name: str, capability: str, seconds: float = 0.03) -> Agent:
    agent = Agent(name, capabilities=[AgentCapability(id=capability, proficiency=0.8)], max_concurrency=1)

    @agent.action("work")
    async def work(ctx: Context, p: dict[str, object]) -> str:
        await anyio.sleep(float(p.get("seconds", seconds)))  # type: ignore[arg-type]
        return ctx.instance_id

    return agent


async def test_a_view_routing_to_one_capability_hears_nothing_of_another_capabilitys_flips(
    nats_url: str, redis_url: str, namespace: str
) -> None:
    s = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace, heartbeat_interval=0.5)
    async with Runtime(s) as serving, Runtime(s) as caller, Runtime(s) as other:
        [x] = await serving.serve(_agent("xer", "cap.x"))
        [y] = await serving.serve(_agent("yer", "cap.y"))
        view = caller.view
        assert view is not None
        assert await caller.call(by_capability("cap.x"), "work", {}) == x.instance_id
        assert view.follows(["cap.x"]) and not view.follows(["cap.y"])
        await anyio.sleep(1.0)  # the first call's own flips are written and heard
        before = view.heard
        for _ in range(20):  # y flips busy and back on every call: written, but not for this view
            await other.call("yer", "work", {})
        await anyio.sleep(1.5)
        assert view.heard == before
        assert view.get(y.instance_id) is None and view.size() == 1
        for _ in range(5):  # x's flips are heard
            await other.call("xer", "work", {})
        with anyio.fail_after(3):
            while view.heard == before:
                await anyio.sleep(0.05)


async def test_the_first_call_to_a_capability_finds_its_instances_at_once_busy_ones_included(
    nats_url: str, redis_url: str, namespace: str
) -> None:
    s = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace, heartbeat_interval=0.5)
    async with Runtime(s) as serving:
        [x] = await serving.serve(_agent("xer", "cap.x"))
        async with Runtime(s) as caller:
            assert caller.view is not None
            await caller.view.ready.wait()
            assert caller.view.size() == 0  # it follows nothing yet
            assert await caller.call(by_capability("cap.x"), "work", {}) == x.instance_id
        async with Runtime(s) as holder, Runtime(s) as caller, anyio.create_task_group() as tg:
            tg.start_soon(holder.call, "xer", "work", {"seconds": 3.0})  # its only slot: busy
            with anyio.fail_after(3):
                while (p := await serving.registry.get(x.instance_id)) is None or p.status != "busy":  # type: ignore[union-attr]
                    await anyio.sleep(0.02)
            # A fresh view loads the busy instance too: the call queues there instead of failing.
            assert await caller.call(by_capability("cap.x"), "work", {}) == x.instance_id


async def test_under_skewed_load_a_view_following_one_capability_routes_as_the_whole_registrys_view(
    registry: Registry,
) -> None:
    """Routing quality: the same choices, step by step, as a view of the whole registry."""
    n = 8
    states = [InstanceState(f"w-{i}", "available", 0, 4) for i in range(n)]
    others = [InstanceState(f"o-{i}", "available", 0, 4) for i in range(n)]
    await registry.register_many([profile(s.agent_id, {"work": 0.8}, capacity=4) for s in states])
    await registry.register_many([profile(s.agent_id, {"else": 0.8}, capacity=4) for s in others])
    everything, used = LocalView(registry), LocalView(registry, follow="used")
    async with anyio.create_task_group() as tg:
        await tg.start(everything.run)
        await tg.start(used.run)
        await everything.ready.wait()
        await used.follow(["work"])
        assert used.size() == n and everything.size() == 2 * n
        loads = [0] * n
        landed: dict[str, int] = {}
        for step in range(40):
            # Skew: the first instances carry most of the load; each call adds to its choice's.
            chosen = used.best(["work"])
            assert chosen is not None
            assert everything.best(["work"]) is not None
            i = int(chosen.agent_id[2:])
            landed[chosen.agent_id] = landed.get(chosen.agent_id, 0) + 1
            loads[i] = min(4, loads[i] + 1)
            for j in range(n):
                if step % 5 == 0 and loads[j]:
                    loads[j] -= 1  # calls end
            skewed = [max(loads[j], 3 if j < 2 else 0) for j in range(n)]
            await registry.heartbeat(
                [
                    InstanceState(s.agent_id, "busy" if skewed[j] >= 4 else "available", skewed[j], 4)
                    for j, s in enumerate(states)
                ]
            )
            with anyio.fail_after(3):  # both views have heard of the new loads
                while _loads(used, states) != _loads(everything, states):
                    await anyio.sleep(0.01)
            a, b = used.best(["work"]), everything.best(["work"])
            assert a is not None and b is not None
            assert a.load_ratio == b.load_ratio  # equally good: the same least load
        # The loaded pair is passed over; the calls spread over the others.
        assert landed.get("w-0", 0) + landed.get("w-1", 0) <= 2, landed
        assert len(landed) >= n - 2, landed
        assert used.get("o-0") is None
        tg.cancel_scope.cancel()


def _loads(view: LocalView, states: list[InstanceState]) -> list[int | None]:
    return [(e.profile.load if (e := view.get(s.agent_id)) else None) for s in states]
