"""The capability registry against a real Redis server."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from discovery import AgentCapability, AgentProfile, InstanceState, LocalView, Registry, match_score

pytestmark = pytest.mark.anyio


def profile(
    agent_id: str,
    caps: dict[str, float],
    *,
    name: str | None = None,
    status: str = "available",
    load: int = 0,
    capacity: int = 10,
) -> AgentProfile:
    return AgentProfile(
        agent_id=agent_id,
        name=name or agent_id.split("-")[0],
        capabilities=[AgentCapability(id=c, proficiency=p) for c, p in caps.items()],
        status=status,  # type: ignore[arg-type]
        load=load,
        capacity=capacity,
    )


async def test_register_list_get_and_deregister(registry: Registry) -> None:
    await registry.register(profile("coder-1", {"code": 0.9, "review": 0.4}))
    await registry.register(profile("reader-1", {"read": 0.8}))
    listed = {p.agent_id: p for p in await registry.list_agents()}
    assert set(listed) == {"coder-1", "reader-1"}
    assert listed["coder-1"].proficiencies() == {"code": 0.9, "review": 0.4}
    assert listed["coder-1"].status == "available" and listed["coder-1"].last_seen > 0
    got = await registry.get("reader-1")
    assert got is not None and got.name == "reader"
    await registry.deregister("coder-1")
    assert [p.agent_id for p in await registry.list_agents()] == ["reader-1"]
    assert await registry.find_best_agent(["code"]) is None


async def test_find_best_scores_mean_proficiency_over_the_required_capabilities(
    registry: Registry,
) -> None:
    await registry.register(profile("a-1", {"code": 0.9}))  # mean over [code, test] = 0.45
    await registry.register(profile("b-1", {"code": 0.6, "test": 0.6}))  # 0.6
    await registry.register(profile("c-1", {"test": 1.0}))  # 0.5
    best = await registry.find_best_agent(["code", "test"])
    assert best is not None and (best.agent_id, best.score) == ("b-1", pytest.approx(0.6))
    best = await registry.find_best_agent(["code"])
    assert best is not None and best.agent_id == "a-1"
    assert await registry.find_best_agent(["nothing"]) is None
    assert await registry.find_best_agent([]) is None


async def test_find_agents_with_capability_returns_every_available_instance_best_first(
    registry: Registry,
) -> None:
    await registry.register_many(
        [
            profile("a-1", {"code": 0.5}),
            profile("b-1", {"code": 0.9, "text": 0.1}),
            profile("c-1", {"code": 1.0}, status="busy"),
            profile("d-1", {"text": 0.8}),
        ]
    )
    found = await registry.find_agents_with_capability("code")
    assert [p.agent_id for p in found] == ["b-1", "a-1"]
    assert found[0].capabilities[0].proficiency == 0.9 and found[0].status == "available"
    await registry.heartbeat([InstanceState("c-1", "available", 0, 10)])
    assert [p.agent_id for p in await registry.find_agents_with_capability("code")] == ["c-1", "b-1", "a-1"]
    await registry.deregister("b-1")
    assert [p.agent_id for p in await registry.find_agents_with_capability("code")] == ["c-1", "a-1"]
    assert await registry.find_agents_with_capability("nothing") == []


async def test_busy_and_offline_instances_are_skipped_and_ties_go_to_the_lower_load(
    registry: Registry,
) -> None:
    for i in range(3):
        await registry.register(profile(f"w-{i}", {"work": 0.8}))
    await registry.heartbeat(
        [
            InstanceState("w-0", "busy", 10, 10),
            InstanceState("w-1", "available", 7, 10),
            InstanceState("w-2", "available", 2, 10),
        ]
    )
    best = await registry.find_best_agent(["work"])
    assert best is not None and best.agent_id == "w-2"
    await registry.heartbeat(
        [InstanceState("w-2", "offline", 0, 10), InstanceState("w-1", "available", 7, 10)]
    )
    best = await registry.find_best_agent(["work"])
    assert best is not None and best.agent_id == "w-1"
    await registry.heartbeat([InstanceState("w-0", "available", 0, 10)])
    best = await registry.find_best_agent(["work"])
    assert best is not None and best.agent_id == "w-0"


async def test_an_instance_without_heartbeats_expires_within_three_intervals(
    registry: Registry,
) -> None:
    await registry.register(profile("gone-1", {"x": 1.0}))
    await registry.register(profile("kept-1", {"x": 0.5}))
    start = anyio.current_time()
    while True:
        await registry.heartbeat([InstanceState("kept-1", "available", 0, 10)])
        ids = {p.agent_id for p in await registry.list_agents()}
        if "gone-1" not in ids:
            break
        await anyio.sleep(0.05)
    assert anyio.current_time() - start <= 3 * registry.heartbeat_interval + 0.1
    assert ids == {"kept-1"}
    best = await registry.find_best_agent(["x"])
    assert best is not None and best.agent_id == "kept-1"
    assert await registry.sweep() == 1  # find_best only reads: the sweep prunes the expired entry
    assert await registry.sweep() == 0


async def test_heartbeat_reports_instances_the_server_lost(registry: Registry) -> None:
    await registry.register(profile("p-1", {"x": 1.0}))
    await registry.redis.delete(registry.keys.instance("p-1"))
    assert await registry.heartbeat([InstanceState("p-1", "available", 0, 4)]) == ["p-1"]


async def test_find_best_is_one_round_trip_at_any_size(registry: Registry) -> None:
    sent: list[Any] = []
    original = registry.redis.execute_command

    async def counting(*args: Any, **kwargs: Any) -> Any:
        sent.append(args[0])
        return await original(*args, **kwargs)

    registry = Registry(registry.redis, namespace=registry.namespace, heartbeat_interval=60)
    for size in (10, 1000):
        await registry.register_many(
            [
                profile(f"n{size}-{i}", {f"cap{size}": round(random.random(), 4), "other": 0.5})
                for i in range(size)
            ]
        )
        await registry.find_best_agent([f"cap{size}"])  # loads the library if missing
        registry.redis.execute_command = counting  # type: ignore[method-assign]
        sent.clear()
        best = await registry.find_best_agent([f"cap{size}", "other"])
        registry.redis.execute_command = original  # type: ignore[method-assign]
        assert best is not None
        assert sent == ["FCALL_RO"]  # one read-only function call


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    instances=st.lists(
        st.tuples(
            st.dictionaries(
                st.sampled_from("abcde"),
                st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9, 1.0]),
                min_size=1,
            ),
            st.sampled_from(["available", "available", "busy"]),
        ),
        min_size=1,
        max_size=40,
    ),
    required=st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3, unique=True),
)
async def test_the_server_side_search_finds_the_brute_force_best_score(
    registry: Registry, instances: list[tuple[dict[str, float], str]], required: list[str]
) -> None:
    await registry.redis.delete(
        *[k async for k in registry.redis.scan_iter(registry.keys.prefix + "*")] or ["-"]
    )
    for i, (caps, status) in enumerate(instances):
        await registry.register(profile(f"i-{i}", caps, status=status))
    expected = max(
        (match_score(caps, required) for caps, status in instances if status == "available"),
        default=0.0,
    )
    best = await registry.find_best_agent(required)
    if expected <= 0:
        assert best is None
    else:
        assert best is not None and best.score == pytest.approx(expected)
        winner = instances[int(best.agent_id.split("-")[1])]
        assert winner[1] == "available" and match_score(winner[0], required) == pytest.approx(expected)


async def test_the_local_view_follows_registrations_status_and_departures(
    registry: Registry,
) -> None:
    view = LocalView(registry)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        with anyio.fail_after(2):
            await view.ready.wait()
        await registry.register(profile("v-1", {"edit": 0.9}))
        await registry.register(profile("v-2", {"edit": 0.7}))
        await _until(lambda: len(view.entries()) == 2)
        entry = view.best(["edit"])
        assert entry is not None and entry.agent_id == "v-1"
        await registry.heartbeat([InstanceState("v-1", "busy", 10, 10)])
        await _until(lambda: view.get("v-1") is not None and view.get("v-1").profile.status == "busy")  # type: ignore[union-attr]
        entry = view.best(["edit"])
        assert entry is not None and entry.agent_id == "v-2"  # busy skipped while another is available
        await registry.deregister("v-2")
        await _until(lambda: view.get("v-2") is None)
        entry = view.best(["edit"])
        assert entry is not None and entry.agent_id == "v-1"  # only busy ones left: least loaded busy
        # v-1 stops heartbeating: the sweeper announces its expiry (3 intervals after its last beat)
        await _until(lambda: view.best(["edit"]) is None, timeout=3 * registry.heartbeat_interval + 1)
        tg.cancel_scope.cancel()


async def _until(predicate: Any, timeout: float = 2.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)
