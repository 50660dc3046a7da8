"""The local view's routing choice equals a brute-force search (no Redis involved)."""

from __future__ import annotations

import time

import anyio
import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from discovery import AgentCapability, AgentProfile, LocalView, Registry, ViewEntry, match_score
from discovery._refetch import ReadBudget, Refetch

STATUSES = ["available", "available", "busy", "offline"]


def view_of(instances: list[tuple[dict[str, float], str, int]]) -> LocalView:
    view = LocalView(Registry(aioredis.Redis(), namespace="unit"))
    view.connected = True
    for i, (caps, status, load) in enumerate(instances):
        view.upsert(
            AgentProfile(
                agent_id=f"i-{i}",
                name="w",
                capabilities=[AgentCapability(id=c, proficiency=p) for c, p in caps.items()],
                status=status,  # type: ignore[arg-type]
                load=load,
                capacity=10,
            )
        )
    return view


@settings(max_examples=400, deadline=None)
@given(
    instances=st.lists(
        st.tuples(
            st.dictionaries(
                st.sampled_from("abcde"), st.sampled_from([0.0, 0.2, 0.5, 0.7, 0.9, 1.0]), min_size=1
            ),
            st.sampled_from(STATUSES),
            st.integers(0, 10),
        ),
        max_size=60,
    ),
    required=st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3),
    exclude=st.sets(st.integers(0, 59), max_size=5),
)
def test_best_matches_brute_force(
    instances: list[tuple[dict[str, float], str, int]], required: list[str], exclude: set[int]
) -> None:
    view = view_of(instances)
    excluded = {f"i-{i}" for i in exclude}
    chosen = view.best(required, exclude=excluded)
    candidates = [
        (match_score(caps, required), status, -load / 10, f"i-{i}")
        for i, (caps, status, load) in enumerate(instances)
        if f"i-{i}" not in excluded and status != "offline" and match_score(caps, required) > 0
    ]
    available = [c for c in candidates if c[1] == "available"]
    if available:
        assert chosen is not None and chosen.profile.status == "available"
        assert match_score(chosen.proficiencies, required) == max(c[0] for c in available)
    elif candidates:
        assert chosen is not None and chosen.profile.status == "busy"
        best = max((c[0], c[2]) for c in candidates)
        assert (match_score(chosen.proficiencies, required), -chosen.load_ratio) == best
    else:
        assert chosen is None


def test_removal_and_replacement_keep_the_ranking_consistent() -> None:
    view = view_of([({"x": 0.9}, "available", 0), ({"x": 0.5}, "available", 0)])
    assert view.best(["x"]).agent_id == "i-0"  # type: ignore[union-attr]
    view.remove("i-0")
    assert view.best(["x"]).agent_id == "i-1"  # type: ignore[union-attr]
    view.upsert(
        AgentProfile(agent_id="i-1", name="w", capabilities=[AgentCapability(id="y", proficiency=1.0)])
    )
    assert view.best(["x"]) is None and view.best(["y"]).agent_id == "i-1"  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(
    instances=st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from("abc"), st.sampled_from([0.2, 0.5, 0.9, 1.0]), min_size=1),
            st.sampled_from(STATUSES),
            st.integers(0, 10),
        ),
        max_size=15,
    ),
    capability=st.sampled_from("abc"),
)
def test_find_agents_with_capability_lists_every_available_instance_best_first(
    instances: list[tuple[dict[str, float], str, int]], capability: str
) -> None:
    view = view_of(instances)
    found = view.find_agents_with_capability(capability)
    expected = {
        f"i-{i}"
        for i, (caps, status, _) in enumerate(instances)
        if capability in caps and status == "available"
    }
    assert {p.agent_id for p in found} == expected
    proficiencies = [p.proficiencies()[capability] for p in found]
    assert proficiencies == sorted(proficiencies, reverse=True)


def test_equally_proficient_instances_go_to_the_least_loaded_within_a_bounded_window() -> None:
    from discovery.view import TIE_WINDOW

    loads = [9, 4, 7, 2, 8]
    view = view_of([({"x": 1.0}, "available", load) for load in loads] + [({"x": 0.5}, "available", 0)])
    assert view.best(["x"]).agent_id == "i-3"  # type: ignore[union-attr]
    assert view.best(["x"], exclude={"i-3"}).agent_id == "i-1"  # type: ignore[union-attr]
    # With thousands of replicas the choice costs the same: only the first window of the
    # ranked list is compared, so an idle replica ranked beyond it is not looked at.
    many = view_of([({"x": 1.0}, "available", 5)] * 2000 + [({"x": 1.0}, "available", 0)])
    window = [agent_id for _, agent_id in sorted((-1.0, f"i-{i}") for i in range(2001))][:TIE_WINDOW]
    chosen = many.best(["x"])
    assert chosen is not None and chosen.agent_id in window and "i-2000" not in window


@settings(max_examples=200, deadline=None)
@given(
    instances=st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from("abc"), st.sampled_from([0.2, 0.5, 1.0]), min_size=1),
            st.sampled_from(STATUSES),
            st.integers(0, 10),
            st.sampled_from(["p", "q", "r"]),
        ),
        max_size=15,  # within one TIE_WINDOW, so instance ids do not decide which loads are compared
    ),
    required=st.lists(st.sampled_from("abc"), min_size=1, max_size=2),
    allowed_names=st.sets(st.sampled_from(["p", "q", "r"])),
)
def test_best_with_allowed_equals_best_over_the_allowed_agents_only(
    instances: list[tuple[dict[str, float], str, int, str]], required: list[str], allowed_names: set[str]
) -> None:
    view = view_of([(caps, status, load) for caps, status, load, _ in instances])
    names = {f"i-{i}": name for i, (*_, name) in enumerate(instances)}
    for agent_id, name in names.items():
        view.get(agent_id).profile.name = name  # type: ignore[union-attr]
    only_allowed = view_of([(c, s, ld) for c, s, ld, name in instances if name in allowed_names])
    chosen = view.best(required, allowed=allowed_names.__contains__)
    expected = only_allowed.best(required)
    if expected is None:
        assert chosen is None
    else:
        assert chosen is not None and names[chosen.agent_id] in allowed_names

        # As without ``allowed``: the best score among available ones (ties need not go to the
        # least loaded), else the least loaded busy one.
        def key(entry: ViewEntry) -> tuple[float, str, float]:
            busy = entry.profile.status == "busy"
            return (
                match_score(entry.proficiencies, required),
                entry.profile.status,
                -entry.load_ratio * busy,
            )

        assert key(chosen) == key(expected)


def test_dropped_instances_are_ignored_for_the_registry_ttl_and_then_come_back() -> None:
    view = LocalView(Registry(aioredis.Redis(), namespace="unit", heartbeat_interval=0.02))  # ttl 60 ms
    view.connected = True
    profiles = [
        AgentProfile(agent_id=f"w-{i}", name="w", capabilities=[AgentCapability(id="x", proficiency=p)])
        for i, p in enumerate([0.9, 0.5])
    ]
    view.replace_all(profiles)
    view.drop("w-0")
    assert view.best(["x"]).agent_id == "w-1"  # type: ignore[union-attr]
    view.replace_all(profiles)  # a resync names it: still ignored
    assert view.get("w-0") is None
    time.sleep(view.registry.ttl)
    view.replace_all(profiles)
    assert view.best(["x"]).agent_id == "w-0"  # type: ignore[union-attr]


def test_the_quarantine_holds_a_bounded_number_of_ids() -> None:
    from discovery._quarantine import Quarantine

    now = [0.0]
    quarantine = Quarantine(5.0, limit=100, clock=lambda: now[0])
    for i in range(1000):
        quarantine.add(f"i-{i}")
        now[0] += 0.001
    assert len(quarantine) == 100 and "i-999" in quarantine and "i-0" not in quarantine
    now[0] += 5.0
    assert "i-999" not in quarantine
    quarantine.expire()
    assert len(quarantine) == 0


def test_entries_stay_routable_without_news() -> None:
    """An unchanged instance sends nothing: only a down event or a resync removes its entry."""
    view = view_of([({"x": 0.9}, "available", 0), ({"x": 0.5}, "available", 0)])
    time.sleep(0.05)
    assert len(view.entries()) == 2 and view.best(["x"]).agent_id == "i-0"  # type: ignore[union-attr]
    view.remove("i-0")
    assert view.best(["x"]).agent_id == "i-1"  # type: ignore[union-attr]


def test_one_instance_is_read_back_at_most_once_per_interval() -> None:
    now = [0.0]
    refetch = Refetch(1.0, clock=lambda: now[0])
    assert refetch.allow("a-1") and refetch.allow("b-1")
    assert not any(refetch.allow("a-1") for _ in range(1000))  # a flood: one id marked due
    assert refetch.due() == []  # its interval is not over
    now[0] = 1.0
    assert refetch.due() == ["a-1"] and refetch.due() == []
    assert not refetch.allow("a-1")  # the due read counts as a read
    now[0] = 2.5
    assert refetch.allow("a-1") and refetch.allow("b-1")


def test_reads_for_events_are_bounded_per_window_and_a_flood_ends_in_one_resync() -> None:
    now = [0.0]
    budget = ReadBudget(10.0, floor=100, clock=lambda: now[0])
    assert all(budget.take(entries=50) for _ in range(100))
    assert not any(budget.take(entries=50) for _ in range(10_000))  # a flood of distinct ids
    assert not budget.resync_due()  # the window is not over
    now[0] = 10.0
    assert budget.resync_due() and not budget.resync_due()  # one snapshot per window ran over
    assert budget.take(entries=50)  # a new window
    assert all(budget.take(entries=500) for _ in range(499))  # a large view reads as many as it holds
    assert not budget.take(entries=500)


@pytest.mark.anyio
async def test_a_wait_on_the_entries_ends_at_the_change_that_makes_it_true() -> None:
    view = view_of([({"x": 0.9}, "available", 0)])
    done: list[str] = []

    async def wait(name: str) -> None:
        await view.wait_until(lambda: view.instances_of(name) > 0)
        done.append(name)

    with anyio.fail_after(1):
        await wait("w")  # true already: no change needed
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, "a")
            tg.start_soon(wait, "b")
            await anyio.wait_all_tasks_blocked()
            view.set_state("i-0", "busy", 1, 10)  # a change that makes neither true
            await anyio.wait_all_tasks_blocked()
            assert done == ["w"]
            view.upsert(AgentProfile(agent_id="a-1", name="a", capacity=1))
            await anyio.wait_all_tasks_blocked()
            assert done == ["w", "a"]
            view.replace_all([AgentProfile(agent_id="b-1", name="b", capacity=1)])
    assert done == ["w", "a", "b"]
