"""Routing by capability on a2a.testing's broker, whose in-memory registry its runtimes share as Redis."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from a2a import Agent, AgentCapability, Context, Runtime, by_capability, by_instance
from a2a.errors import NoCapableAgent
from a2a.testing import TestBroker
from discovery import (
    AgentProfile,
    AgentStatus,
    InstanceState,
    LocalView,
    MemoryRegistry,
    Registry,
    TrustTracker,
)
from discovery._events import parse_event

pytestmark = pytest.mark.anyio

FAST = 0.05
"""A heartbeat interval that lets load and expiry show within a test (ttl: 0.15 s)."""


def offering(
    name: str,
    capability: str,
    proficiency: float = 1.0,
    *,
    gate: anyio.Event | None = None,
    max_concurrency: int = 4,
    trust: TrustTracker | None = None,
) -> Agent:
    """An agent offering one capability; ``whoami`` answers its instance id, once ``gate`` is set
    when asked to ``hold``."""
    agent = Agent(
        name,
        capabilities=[AgentCapability(id=capability, proficiency=proficiency)],
        max_concurrency=max_concurrency,
        trust=trust,
    )

    @agent.action("whoami")
    async def whoami(ctx: Context, params: dict[str, Any]) -> str:
        if params.get("hold") and gate is not None:
            await gate.wait()
        return ctx.instance_id

    return agent


relay = Agent("relay")


@relay.action("ask")
async def ask(ctx: Context, params: dict[str, Any]) -> Any:
    return await ctx.call(by_capability(params["capability"]), "whoami", {})


def view_of(rt: Runtime) -> LocalView:
    assert rt.view is not None
    return rt.view


def instance(rt: Runtime, agent: str) -> str:
    return rt.hosts[agent].instance_id


async def until(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.005)


async def until_seen(view: LocalView, agent_id: str, status: AgentStatus, load: int | None = None) -> None:
    """Wait until ``view`` has the instance in ``status`` (and with ``load``, if given)."""

    def seen() -> bool:
        entry = view.get(agent_id)
        return entry is not None and entry.profile.status == status and load in (None, entry.profile.load)

    await until(seen)


async def test_an_agent_served_by_one_runtime_is_found_by_capability_from_another() -> None:
    coder = offering("coder", "code.edit")
    reader = offering("reader", "code.read")
    async with TestBroker() as broker, broker.runtime(coder) as serving, broker.runtime(relay) as calling:
        assert isinstance(calling.registry, MemoryRegistry)
        assert await calling.call(by_capability("code.edit"), "whoami") == instance(serving, "coder")
        assert await calling.call("relay", "ask", {"capability": "code.edit"}) == instance(serving, "coder")
        # Served once the caller runs: its view hears of it by the registry's events.
        await serving.serve(reader)
        await calling.wait_for_agents(["reader"], timeout=2)
        assert await calling.call("relay", "ask", {"capability": "code.read"}) == instance(serving, "reader")


async def test_the_more_proficient_instance_is_chosen_and_a_busy_one_is_passed_over() -> None:
    gate = anyio.Event()
    expert = offering("expert", "code.edit", 0.9, gate=gate, max_concurrency=1)
    novice = offering("novice", "code.edit", 0.5)
    async with (
        TestBroker() as broker,
        broker.runtime(expert) as a,
        broker.runtime(novice) as b,
        broker.runtime(heartbeat_interval=FAST) as caller,  # its view reads back an instance this often
    ):
        expert_id, novice_id = instance(a, "expert"), instance(b, "novice")
        for _ in range(3):
            assert await caller.call(by_capability("code.edit"), "whoami") == expert_id
        best = await caller.registry.find_best_agent(["code.edit"]) if caller.registry else None
        assert best is not None and (best.agent_id, best.score) == (expert_id, 0.9)
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller.call, by_instance(expert_id), "whoami", {"hold": True})
            view = view_of(caller)
            await until_seen(view, expert_id, "busy")
            assert await caller.call(by_capability("code.edit"), "whoami") == novice_id
            gate.set()
        await until_seen(view, expert_id, "available")
        assert await caller.call(by_capability("code.edit"), "whoami") == expert_id


async def test_under_skewed_load_the_less_loaded_of_equal_instances_is_chosen() -> None:
    gates = {"a": anyio.Event(), "b": anyio.Event()}
    async with (
        TestBroker() as broker,
        broker.runtime(offering("worker", "code.edit", gate=gates["a"]), heartbeat_interval=FAST) as a,
        broker.runtime(offering("worker", "code.edit", gate=gates["b"]), heartbeat_interval=FAST) as b,
        broker.runtime(heartbeat_interval=FAST) as caller,
    ):
        ids = {"a": instance(a, "worker"), "b": instance(b, "worker")}
        view = view_of(caller)
        await view.follow(["code.edit"])  # what the first call by capability would do
        for loaded, other in (("a", "b"), ("b", "a")):
            async with anyio.create_task_group() as tg:
                for _ in range(3):  # 3 of its 4 slots: still available, three quarters loaded
                    tg.start_soon(caller.call, by_instance(ids[loaded]), "whoami", {"hold": True})
                await until_seen(view, ids[loaded], "available", 3)
                for _ in range(4):
                    assert await caller.call(by_capability("code.edit"), "whoami") == ids[other]
                gates[loaded].set()
            await until_seen(view, ids[loaded], "available", 0)


async def test_a_view_follows_the_capabilities_it_routes_to_and_hears_nothing_of_others() -> None:
    gates = {"x": anyio.Event(), "y": anyio.Event()}
    xer = offering("xer", "cap.x", gate=gates["x"], max_concurrency=1)
    yer = offering("yer", "cap.y", gate=gates["y"], max_concurrency=1)
    async with (
        TestBroker() as broker,
        broker.runtime(xer, yer, heartbeat_interval=FAST) as serving,
        broker.runtime(heartbeat_interval=FAST) as caller,
        broker.runtime(heartbeat_interval=FAST) as other,
    ):
        view = view_of(caller)
        await view.ready.wait()
        assert view.size() == 0  # nothing asked for yet: nothing held
        assert await caller.call(by_capability("cap.x"), "whoami") == instance(serving, "xer")
        assert view.follows(["cap.x"]) and not view.follows(["cap.y"])
        await anyio.sleep(4 * FAST)
        heard = view.heard
        async with anyio.create_task_group() as tg:  # y busy, then available: not for this view
            tg.start_soon(other.call, "yer", "whoami", {"hold": True})
            await anyio.sleep(4 * FAST)
            gates["y"].set()
        await anyio.sleep(4 * FAST)
        assert view.heard == heard and view.get(instance(serving, "yer")) is None
        async with anyio.create_task_group() as tg:  # x busy: heard
            tg.start_soon(other.call, "xer", "whoami", {"hold": True})
            await until_seen(view, instance(serving, "xer"), "busy")
            gates["x"].set()
        assert view.heard > heard


async def test_an_instance_trusted_less_than_the_callers_floor_is_not_chosen() -> None:
    peer = offering("peer", "web.search", 1.0, trust=TrustTracker(base=0.3))  # unsigned card: trust 0.3
    local = offering("local", "web.search", 0.5)
    async with (
        TestBroker() as broker,
        broker.runtime(peer) as serving,
        broker.runtime(trust_floor=0.5) as strict,
        broker.runtime() as lax,  # the default floor, 0.2
    ):
        peer_id = instance(serving, "peer")
        listed = await lax.registry.list_agents() if lax.registry else []
        assert [p.agent_id for p in listed] == [peer_id] and listed[0].trust == pytest.approx(0.3)
        with pytest.raises(NoCapableAgent):
            await strict.call(by_capability("web.search"), "whoami")
        assert await lax.call(by_capability("web.search"), "whoami") == peer_id
        # Ranked by proficiency times trust: 0.5 x 1 for an agent of the deployment beats 1 x 0.3.
        await serving.serve(local)
        await lax.wait_for_agents(["local"], timeout=2)
        await strict.wait_for_agents(["local"], timeout=2)
        local_id = instance(serving, "local")
        assert await lax.call(by_capability("web.search"), "whoami") == local_id
        assert await strict.call(by_capability("web.search"), "whoami") == local_id


async def test_closing_the_serving_runtime_takes_its_instances_away() -> None:
    async with TestBroker() as broker, broker.runtime(relay) as caller:
        async with broker.runtime(offering("coder", "code.edit")) as serving:
            await caller.wait_for_agents(["coder"], timeout=2)
            found = await caller.call("relay", "ask", {"capability": "code.edit"})
            assert found == instance(serving, "coder")
        with pytest.raises(NoCapableAgent):
            await caller.call(by_capability("code.edit"), "whoami")
        view = view_of(caller)
        await until(lambda: view.instances_of("coder") == 0)
        assert caller.registry is not None
        assert [p.name for p in await caller.registry.list_agents()] == ["relay"]


async def test_an_instance_whose_heartbeats_stop_expires_after_the_ttl() -> None:
    async with (
        TestBroker() as broker,
        broker.runtime(offering("reader", "code.read"), heartbeat_interval=FAST) as live,
        broker.runtime(heartbeat_interval=FAST) as caller,
    ):
        # A process that registered and died: nothing beats for it any more.
        ghost = broker.registry.connect(heartbeat_interval=FAST)
        edit = AgentCapability(id="code.edit")
        profile = AgentProfile(agent_id="coder-deadbeef", name="coder", capabilities=[edit], capacity=4)
        start = time.monotonic()
        await ghost.register(profile)
        view = view_of(caller)
        await caller.wait_for_agents(["coder"], timeout=2)
        await until(lambda: view.get("coder-deadbeef") is None)
        assert time.monotonic() - start >= ghost.ttl  # gone after its ttl, not before
        with pytest.raises(NoCapableAgent):
            await caller.call(by_capability("code.edit"), "whoami")
        lost = await ghost.heartbeat([InstanceState("coder-deadbeef", "available", 0, 4)])
        assert lost == ["coder-deadbeef"]  # its process, were it alive, would register again
        # The live instance's heartbeats keep it, many ttls on.
        await anyio.sleep(4 * ghost.ttl)
        assert caller.registry is not None and await caller.registry.get(instance(live, "reader")) is not None
        assert await caller.call(by_capability("code.read"), "whoami") == instance(live, "reader")


async def test_the_registry_lists_every_runtimes_instances_with_their_state() -> None:
    gate = anyio.Event()
    coder = offering("coder", "code.edit", 0.8, gate=gate, max_concurrency=1)
    async with (
        TestBroker() as broker,
        broker.runtime(coder, offering("reader", "code.read")) as serving,
        broker.runtime() as other,
    ):
        registry = other.registry
        assert registry is not None
        listed = await registry.list_agents()
        rows = sorted((p.name, p.agent_id, p.status, p.load, p.capacity) for p in listed)
        assert rows == [
            ("coder", instance(serving, "coder"), "available", 0, 1),
            ("reader", instance(serving, "reader"), "available", 0, 4),
        ]
        coder_row = next(p for p in listed if p.name == "coder")
        assert coder_row.proficiencies() == {"code.edit": 0.8} and coder_row.metadata
        assert coder_row.metadata["actions"] == ["whoami"]

        async def coder_state() -> tuple[str, int]:
            found = await registry.get(instance(serving, "coder"))
            assert found is not None
            return found.status, found.load

        async with anyio.create_task_group() as tg:
            tg.start_soon(other.call, "coder", "whoami", {"hold": True})
            with anyio.fail_after(3):
                while await coder_state() != ("busy", 1):  # written within a moment of the change
                    await anyio.sleep(0.005)
            gate.set()
        with anyio.fail_after(3):
            while await coder_state() != ("available", 0):
                await anyio.sleep(0.005)


async def test_events_come_as_the_redis_functions_publish_them() -> None:
    broker = TestBroker()
    writer = broker.registry.connect(heartbeat_interval=FAST)
    follower = broker.registry.connect().pubsub()
    await follower.subscribe(writer.keys.events)
    edit = AgentCapability(id="code.edit")
    profile = AgentProfile(agent_id="coder-1", name="coder", capabilities=[edit], capacity=8)
    await writer.register(profile)
    # Published: a load moved by a quarter of the capacity since the last published, or a new status.
    beats: list[tuple[int, AgentStatus]] = [(0, "available"), (1, "available"), (2, "available")]
    beats += [(3, "available"), (8, "busy"), (8, "busy")]
    for load, status in beats:
        assert await writer.heartbeat([InstanceState("coder-1", status, load, 8)]) == []
    await writer.deregister("coder-1")
    events = []
    while (message := await follower.get_message(timeout=0)) is not None:
        event = parse_event(message["data"])
        assert event is not None
        events.append((event.e, event.load, event.status))
    assert events == [
        ("reg", None, None),
        ("st", 2, "available"),
        ("st", 8, "busy"),
        ("down", None, None),
    ]
    other = broker.registry.connect(namespace="elsewhere")
    assert await other.list_agents() == [] and await writer.list_agents() == []


async def test_the_runtime_gets_the_registry_it_is_given() -> None:
    async with TestBroker() as broker:
        mine = broker.registry.connect(namespace="mine")
        async with broker.runtime(registry=mine) as rt:
            assert rt.registry is mine and rt.history is None
        async with broker.runtime(offering("coder", "code.edit"), registry=None) as rt:
            assert rt.registry is None and rt.view is None
            with pytest.raises(NoCapableAgent, match="needs a registry"):
                await rt.call(by_capability("code.edit"), "whoami")
        async with broker.runtime(redis_url="redis://127.0.0.1:1") as rt:
            assert type(rt.registry) is Registry
        async with broker.runtime(offering("coder", "code.edit")), broker.runtime(namespace="t2") as rt:
            with pytest.raises(NoCapableAgent):  # registries are per namespace, as in Redis
                await rt.call(by_capability("code.edit"), "whoami")
