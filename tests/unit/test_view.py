"""The local view's routing choice equals a brute-force search (no Redis involved)."""

from __future__ import annotations

import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from discovery import AgentCapability, AgentProfile, LocalView, Registry, match_score

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
