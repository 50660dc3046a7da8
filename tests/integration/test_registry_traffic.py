"""Registry traffic follows change, not size: what heartbeats publish, and how views learn of deaths."""

from __future__ import annotations

import time

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from a2a.bench import registry_load
from a2a.bench.registry_load import run_registry_bench
from a2a.core.presence import STATE_WRITES
from discovery import InstanceState, LocalView, Registry
from discovery._beats import VERIFY_EVERY

from .conftest import REGISTRY_INTERVAL as INTERVAL
from .test_registry import profile

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


class Events:
    """Every event published on the registry's channel, as a test subscriber received it."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.seen: list[dict[str, object]] = []

    async def follow(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        pubsub = self.registry.pubsub()
        await pubsub.subscribe(self.registry.keys.events)
        task_status.started()
        try:
            while True:
                msg = await pubsub.get_message(timeout=0.05)
                if msg is not None:
                    self.seen.append(msgspec.json.decode(msg["data"]))
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def settle(self) -> list[dict[str, object]]:
        """Events so far, once the channel has been quiet for a moment."""
        count = -1
        while count != len(self.seen):
            count = len(self.seen)
            await anyio.sleep(0.15)
        return list(self.seen)

    def kinds(self, kind: str) -> list[dict[str, object]]:
        return [e for e in self.seen if e["e"] == kind]


async def test_heartbeats_that_change_nothing_publish_nothing(registry: Registry) -> None:
    events = Events(registry)
    states = [InstanceState(f"w-{i}", "available", 0, 8) for i in range(20)]
    async with anyio.create_task_group() as tg:
        await tg.start(events.follow)
        await registry.register_many([profile(s.agent_id, {"edit": 0.5}, capacity=8) for s in states])
        await events.settle()
        assert len(events.kinds("reg")) == 20
        for _ in range(2 * VERIFY_EVERY):  # full verifying beats included
            assert await registry.heartbeat(states) == []
        await events.settle()
        assert events.kinds("st") == [] and events.kinds("down") == []
        tg.cancel_scope.cancel()


async def test_status_trust_capacity_and_load_past_the_step_are_published(registry: Registry) -> None:
    events = Events(registry)
    await registry.register(profile("w-1", {"edit": 0.5}, capacity=8))
    async with anyio.create_task_group() as tg:
        await tg.start(events.follow)
        published: list[tuple[str, int, int]] = []
        for status, load, capacity, trust, publishes in [
            ("available", 1, 8, None, False),  # under a quarter of the capacity
            ("available", 2, 8, None, True),  # a quarter: routing may care
            ("available", 3, 8, None, False),  # one from the load last published
            ("available", 1, 8, None, False),  # hysteresis: back within the step of 2
            ("available", 0, 8, None, True),
            ("busy", 0, 8, None, True),
            ("busy", 0, 4, None, True),  # capacity
            ("busy", 0, 4, 0.5, True),  # trust
            ("busy", 0, 4, 0.5, False),
        ]:
            await registry.heartbeat([InstanceState("w-1", status, load, capacity, trust)])  # type: ignore[arg-type]
            if publishes:
                published.append((status, load, capacity))
        await events.settle()
        sent = [(e["status"], e["load"], e["capacity"]) for e in events.kinds("st")]
        assert sent == published
        assert events.kinds("st")[-1]["trust"] == 0.5
        tg.cancel_scope.cancel()


async def test_a_view_learns_of_a_death_within_the_ttl_from_the_sweeper(registry: Registry) -> None:
    view = LocalView(registry)
    states = [InstanceState(f"w-{i}", "available", 0, 8) for i in range(5)]
    await registry.register_many([profile(s.agent_id, {"edit": 0.5 + i / 10}) for i, s in enumerate(states)])
    last_beat = {s.agent_id: time.monotonic() for s in states}
    gone_after: dict[str, float] = {}

    async def beat() -> None:
        while True:
            alive = [s for s in states if s.agent_id != "w-4"]  # w-4 has died
            assert await registry.heartbeat(alive) == []
            now = time.monotonic()
            last_beat.update({s.agent_id: now for s in alive})
            await anyio.sleep(INTERVAL)

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        await tg.start(view.run)
        await view.ready.wait()
        assert len(view.entries()) == 5
        with anyio.fail_after(3 * registry.ttl):
            while view.get("w-4") is not None:
                await anyio.sleep(0.005)
        gone_after["w-4"] = time.monotonic() - last_beat["w-4"]
        await anyio.sleep(3 * registry.ttl)  # the living stay, though they publish nothing
        assert sorted(e.agent_id for e in view.entries()) == ["w-0", "w-1", "w-2", "w-3"]
        tg.cancel_scope.cancel()
    # Its last beat (registration) set its expiry one ttl later; the sweeper wakes for it.
    assert registry.ttl - 0.05 <= gone_after["w-4"] <= registry.ttl + INTERVAL / 4 + 0.15, gone_after


async def test_one_view_sweeps_at_a_time_and_another_takes_over_when_it_stops(
    registry: Registry, redis_url: str, namespace: str
) -> None:
    second = Registry.from_url(redis_url, namespace=namespace, heartbeat_interval=INTERVAL)
    first_view, second_view = LocalView(registry), LocalView(second)
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        async with anyio.create_task_group() as outer:
            async with anyio.create_task_group() as tg:
                await tg.start(first_view.run)
                await first_view.ready.wait()
                outer.start_soon(second_view.run)
                await second_view.ready.wait()
                await anyio.sleep(INTERVAL)
                assert await client.get(registry.keys.sweeper) == first_view.sweeper_id
                tg.cancel_scope.cancel()  # the sweeping process goes away
            await registry.register(profile("w-9", {"edit": 0.9}))  # and never beats again
            with anyio.fail_after(2 * registry.ttl + 1):
                while await client.get(registry.keys.sweeper) != second_view.sweeper_id:
                    await anyio.sleep(0.05)
            with anyio.fail_after(2 * registry.ttl):
                while await registry.get("w-9") is not None or second_view.get("w-9") is not None:
                    await anyio.sleep(0.05)
            outer.cancel_scope.cancel()
    finally:
        await second.aclose()
        await client.aclose()


async def test_beats_report_exactly_the_instances_redis_lost(registry: Registry) -> None:
    await registry.register_many([profile(f"w-{i}", {"edit": 0.5}) for i in range(3)])
    states = [InstanceState(f"w-{i}", "available", 0, 10) for i in range(3)]
    assert await registry.heartbeat(states) == []  # the first beat goes in full
    await registry.redis.delete(registry.keys.instance("w-1"))
    lost = [InstanceState("x-1", "available", 0, 10)]  # never registered here
    assert await registry.heartbeat([*states, *lost]) == ["w-1", "x-1"]


def test_the_registry_benchmark_runs_and_a_steady_registry_publishes_nothing(redis_url: str) -> None:
    (result,) = run_registry_bench(redis_url=redis_url, sizes=(300,), seconds=1, churn=0.05)
    assert result["view_entries"] == 300
    assert result["steady"]["view_events_per_s"] == 0
    assert result["steady"]["reregistered"] == 0
    assert 0 < result["churn"]["view_events_per_s"] <= 300 * 0.05 * 2
    assert 0 < result["view_kb_per_instance"] < 50
    # 300 instances of capacity 1 flipping four times a second: each flip written, or at most
    # STATE_WRITES a second each, as the runtime writes them (the events follow the writes).
    assert registry_load.STATE_WRITES == STATE_WRITES
    each, coalesced = result["busy-each"], result["busy-coalesced"]
    assert coalesced["state_writes_per_s"] <= 300 * STATE_WRITES * 1.2 < each["state_writes_per_s"]
    assert coalesced["view_events_per_s"] < each["view_events_per_s"]
    # The view that follows one capability (half the instances offer it) holds and hears half,
    # and at 2.5 times the call rate it hears no more than at the first: the writes are bounded.
    assert result["used_view_entries"] == 150
    fast, faster = result["busy-coalesced-fast"], result["busy-coalesced-faster"]
    assert faster["calls_per_s"] == 2 * fast["calls_per_s"] == 5 * coalesced["calls_per_s"]
    assert 0 < coalesced["used_view_events_per_s"] < 0.75 * coalesced["view_events_per_s"]
    assert faster["used_view_events_per_s"] <= 150 * STATE_WRITES * 1.2


async def _beating(registry: Registry, states: list[InstanceState], dead: set[str]) -> None:
    """Heartbeat ``states`` every interval, except the ids in ``dead``; re-register what is lost."""
    while True:
        for agent_id in await registry.heartbeat([s for s in states if s.agent_id not in dead]):
            await registry.register(profile(agent_id, {"edit": 0.5}))
        await anyio.sleep(INTERVAL)


@pytest.mark.parametrize("tamper", ["capsof deleted", "capsof replaced", "instances deleted"])
async def test_deaths_are_announced_and_indexes_restored_whatever_the_shared_indexes_hold(
    redis_url: str, namespace: str, tamper: str
) -> None:
    """Anyone may edit the shared indexes: deaths are still announced, and full beats repair them."""
    # Eight missed beats (1.6 s) before an instance expires: a loop held up for a moment on a
    # loaded machine must not take a live instance out, which the last assertion checks.
    registry = Registry.from_url(
        redis_url, namespace=namespace, heartbeat_interval=INTERVAL, missed_heartbeats=8
    )
    try:
        await _deaths_announced(registry, tamper)
    finally:
        await registry.aclose()


async def _deaths_announced(registry: Registry, tamper: str) -> None:
    view = LocalView(registry)
    states = [InstanceState(f"w-{i}", "available", 0, 10) for i in range(3)]
    await registry.register_many([profile(s.agent_id, {"edit": 0.5}) for s in states])
    dead: set[str] = set()
    client = registry.redis
    async with anyio.create_task_group() as tg:
        tg.start_soon(_beating, registry, states, dead)
        await tg.start(view.run)
        await view.ready.wait()
        if tamper == "capsof deleted":
            await client.delete(registry.keys.capsof)
        elif tamper == "capsof replaced":
            await client.set(registry.keys.capsof, "x")
        else:
            await client.delete(registry.keys.instances)
        # A full beat of each instance comes within VERIFY_EVERY beats and restores both.
        with anyio.fail_after(VERIFY_EVERY * INTERVAL + 2):
            while (
                await client.type(registry.keys.capsof) != "hash"
                or await client.hlen(registry.keys.capsof) != 3
                or await client.scard(registry.keys.instances) != 3
            ):
                await anyio.sleep(0.05)
        await client.delete(registry.keys.capsof)  # and once more: the death is still announced
        dead.add("w-0")
        with anyio.fail_after(registry.ttl + 2):
            while view.get("w-0") is not None:
                await anyio.sleep(0.02)
        assert view.get("w-1") is not None and view.get("w-2") is not None
        tg.cancel_scope.cancel()


async def test_a_lease_taken_by_hand_does_not_stop_deaths_being_announced(registry: Registry) -> None:
    view = LocalView(registry)
    states = [InstanceState(f"w-{i}", "available", 0, 10) for i in range(2)]
    await registry.register_many([profile(s.agent_id, {"edit": 0.5}) for s in states])
    dead: set[str] = set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_beating, registry, states, dead)
        await tg.start(view.run)
        await view.ready.wait()
        await registry.redis.set(registry.keys.sweeper, "someone-else", px=10**12)  # a lease for ever
        dead.add("w-0")
        with anyio.fail_after(3 * registry.ttl + 2):  # its expiry, then overdue by a lease: taken over
            while view.get("w-0") is not None:
                await anyio.sleep(0.02)
        assert await registry.redis.get(registry.keys.sweeper) == view.sweeper_id
        tg.cancel_scope.cancel()


async def test_forged_departures_and_offline_states_never_take_a_live_instance_out(
    registry: Registry,
) -> None:
    view = LocalView(registry)
    states = [InstanceState("w-0", "available", 0, 10)]
    await registry.register_many([profile("w-0", {"edit": 0.5})])
    absent: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_beating, registry, states, set())
        await tg.start(view.run)
        await view.ready.wait()

        async def watch() -> None:
            while True:
                if view.best(["edit"]) is None:
                    absent.append(time.monotonic())
                await anyio.sleep(0.005)

        tg.start_soon(watch)
        for forged in (
            {"e": "down", "id": "w-0"},
            {"e": "down", "id": "w-0"},  # within the interval of the first one's read
            *({"e": "down", "id": f"x-{i}"} for i in range(50)),  # a flood of others
            {"e": "st", "id": "w-0", "status": "offline", "load": 0, "capacity": 10},
        ):
            await registry.redis.publish(registry.keys.events, msgspec.json.encode(forged))
        await anyio.sleep(1.0)  # past an interval: any deferred read has happened
        entry = view.get("w-0")
        assert entry is not None and entry.profile.status == "available"
        tg.cancel_scope.cancel()
    # Out of routing only until the "offline" is read back: at once, or once the interval
    # since the instance's last read (the forged departures') is over.
    assert not absent or absent[-1] - absent[0] < INTERVAL + 0.1, (absent[0], absent[-1])


async def test_an_instance_flipping_busy_on_every_call_costs_a_few_events_per_interval(
    nats_url: str, redis_url: str, namespace: str
) -> None:
    from a2a import Agent, Context, Runtime, Settings

    one = Agent("one", max_concurrency=1)  # busy while it holds a call, available after

    @one.action("work")
    async def work(ctx: Context, p: dict[str, object]) -> str:
        await anyio.sleep(0.03)
        return "done"

    interval = 1.0
    s = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace, heartbeat_interval=interval)
    async with Runtime(s) as server, Runtime(s) as caller, anyio.create_task_group() as tg:
        assert server.registry is not None
        events = Events(server.registry)
        await tg.start(events.follow)
        await server.serve(one)
        await caller.wait_for_agents(["one"])
        await events.settle()
        before = len(events.kinds("st"))
        started = anyio.current_time()
        for _ in range(40):  # 40 calls, 80 flips
            await caller.call("one", "work", {})
        took = anyio.current_time() - started
        flips = len(events.kinds("st")) - before
        # At most STATE_WRITES state writes per interval (plus the one a window may carry over).
        assert flips <= (took / interval + 1) * STATE_WRITES + 1, (flips, took)
        assert flips < 40  # one per call before: two
        [entry] = [p for p in await server.registry.list_agents() if p.name == "one"]
        with anyio.fail_after(2 * interval):  # the last state (available) is written
            while entry.status != "available":
                await anyio.sleep(0.05)
                [entry] = [p for p in await server.registry.list_agents() if p.name == "one"]
        tg.cancel_scope.cancel()


async def test_under_skewed_load_calls_by_capability_go_to_the_less_loaded_instance(
    nats_url: str, redis_url: str, namespace: str
) -> None:
    """Coalesced state writes still carry load: an instance holding three long calls is passed
    over for an idle one of the same capability, by a caller in another process's place."""
    from a2a import Agent, AgentCapability, Context, Runtime, Settings, by_capability, by_instance

    def worker() -> Agent:
        agent = Agent("worker", capabilities=[AgentCapability(id="work", proficiency=0.9)], max_concurrency=4)

        @agent.action("work")
        async def work(ctx: Context, p: dict[str, float]) -> str:
            await anyio.sleep(p["seconds"])
            return ctx.instance_id

        return agent

    s = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace, heartbeat_interval=0.4)
    async with (
        Runtime(s) as one,
        Runtime(s) as two,
        Runtime(s) as caller,
        anyio.create_task_group() as tg,
    ):
        [busy] = await one.serve(worker())
        [idle] = await two.serve(worker())
        assert caller.view is not None
        await caller.wait_for_agents(["worker"])
        with anyio.fail_after(5):
            while caller.view.instances_of("worker") < 2:
                await anyio.sleep(0.02)
        for _ in range(3):  # skew: three long calls held by one instance
            tg.start_soon(caller.call, by_instance(busy.instance_id), "work", {"seconds": 4.0})
        with anyio.fail_after(3):  # the caller's view hears of that load
            while (entry := caller.view.get(busy.instance_id)) is None or entry.profile.load < 3:
                await anyio.sleep(0.02)
        landed = [await caller.call(by_capability("work"), "work", {"seconds": 0.05}) for _ in range(10)]
        assert landed.count(idle.instance_id) >= 9, landed
        tg.cancel_scope.cancel()
