"""The trust score of external agents (discovery.trust), and routing weighed by it in a view (no Redis)."""

from __future__ import annotations

import math
import random

import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from discovery import AgentCapability, AgentProfile, LocalView, Registry, TrustTracker, match_score
from discovery.profile import CardSignature
from discovery.registry import InstanceState
from discovery.trust import (
    DEFAULT_TRUST_FLOOR,
    INVALID_CEILING,
    UNSIGNED_CEILING,
    VERIFIED_BONUS,
    check_floor,
    signature_rule,
)

H = 600.0  # the default half-life
SIGNATURES: list[CardSignature] = ["verified", "unsigned", "invalid"]

Observation = tuple[bool, float, float]
"""(ok, latency in seconds, time)."""

observations = st.lists(
    st.tuples(
        st.booleans(),
        st.floats(0.0, 60.0),
        st.floats(0.0, 7200.0),
    ),
    max_size=30,
)
signatures = st.sampled_from(SIGNATURES)
bases = st.floats(0.0, 1.0)


def tracker_of(obs: list[Observation], **kwargs: object) -> TrustTracker:
    tracker = TrustTracker(**kwargs)  # type: ignore[arg-type]
    for ok, latency, at in obs:
        tracker.record(ok, latency, at)
    return tracker


def reference(
    obs: list[Observation], now: float, *, base: float = 0.5, signature: CardSignature = "unsigned"
) -> float:
    """The module docstring's formula, written out over the whole list of observations."""
    weights = [2 ** (-max(0.0, now - at) / H) for _, _, at in obs]
    quality = [(1 - 0.5 * (1 - min(1.0, 5.0 / lat if lat else 1.0))) if ok else 0.0 for ok, lat, _ in obs]
    evidence = sum(weights)
    raw = (5 * base + sum(w * q for w, q in zip(weights, quality, strict=True))) / (5 + evidence)
    return signature_rule(raw, signature)


# -- the formula -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signature", "expected"),
    [("unsigned", 0.5), ("verified", 0.5 + VERIFIED_BONUS), ("invalid", INVALID_CEILING)],
)
def test_without_observations_trust_is_the_base_after_the_signature_rule(
    signature: CardSignature, expected: float
) -> None:
    assert TrustTracker(signature=signature).score(0.0) == pytest.approx(expected)
    assert TrustTracker(base=0.8, signature="unsigned").score(1e9) == pytest.approx(0.8)


def test_worked_example_from_the_formula() -> None:
    tracker = TrustTracker()  # base 0.5, K = 5, H = 600 s, L = 5 s, W = 0.5
    tracker.record(False, 0.1, 0.0)
    assert tracker.score(0.0) == pytest.approx(2.5 / 6)  # (5 * 0.5 + 0) / (5 + 1)
    assert tracker.score(H) == pytest.approx(2.5 / 5.5)  # one half-life later: the failure weighs 1/2
    tracker.record(True, 10.0, H)  # twice the target latency: the success counts 0.75
    assert tracker.score(H) == pytest.approx((2.5 + 0.75) / 6.5)
    assert tracker.evidence(2 * H) == pytest.approx(0.75)


@settings(max_examples=300, deadline=None)
@given(obs=observations, now=st.floats(0.0, 20_000.0), base=bases, signature=signatures)
def test_the_tracker_computes_the_documented_formula_in_any_order(
    obs: list[Observation], now: float, base: float, signature: CardSignature
) -> None:
    expected = reference(obs, max([now, *(at for _, _, at in obs)]), base=base, signature=signature)
    shuffled = random.Random(len(obs)).sample(obs, len(obs))
    for order in (obs, sorted(obs, key=lambda o: o[2]), shuffled):
        tracker = tracker_of(order, base=base, signature=signature)
        latest = max([now, *(at for _, _, at in obs)])
        assert tracker.score(latest) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(obs=observations, now=st.floats(0.0, 20_000.0), base=bases, signature=signatures)
def test_trust_stays_in_0_1_and_under_the_signature_ceiling(
    obs: list[Observation], now: float, base: float, signature: CardSignature
) -> None:
    score = tracker_of(obs, base=base, signature=signature).score(now)
    assert 0.0 <= score <= 1.0
    if signature == "unsigned":
        assert score <= UNSIGNED_CEILING
    if signature == "invalid":
        assert score <= INVALID_CEILING < DEFAULT_TRUST_FLOOR  # never routed by capability


@settings(max_examples=300, deadline=None)
@given(obs=observations.filter(lambda o: any(not ok for ok, _, _ in o)), base=bases, signature=signatures)
def test_a_success_in_place_of_a_failure_never_lowers_trust(
    obs: list[Observation], base: float, signature: CardSignature
) -> None:
    now = max(at for _, _, at in obs)
    i = next(i for i, (ok, _, _) in enumerate(obs) if not ok)
    better = [*obs[:i], (True, *obs[i][1:]), *obs[i + 1 :]]
    before = tracker_of(obs, base=base, signature=signature).score(now)
    after = tracker_of(better, base=base, signature=signature).score(now)
    assert after >= before - 1e-12


@settings(max_examples=200, deadline=None)
@given(
    n_ok=st.integers(0, 50),
    n_failed=st.integers(0, 50),
    more=st.integers(1, 20),
    signature=signatures,
)
def test_trust_rises_with_the_success_rate(
    n_ok: int, n_failed: int, more: int, signature: CardSignature
) -> None:
    def score(ok: int, failed: int) -> float:
        calls = [(True, 1.0, 0.0)] * ok + [(False, 1.0, 0.0)] * failed
        return tracker_of(calls, signature=signature).score(0.0)

    assert score(n_ok + more, n_failed) >= score(n_ok, n_failed) - 1e-12
    assert score(n_ok, n_failed + more) <= score(n_ok, n_failed) + 1e-12


@settings(max_examples=200, deadline=None)
@given(base=bases, higher=bases, obs=observations, signature=signatures)
def test_a_higher_base_never_lowers_trust(
    base: float, higher: float, obs: list[Observation], signature: CardSignature
) -> None:
    low, high = sorted((base, higher))
    now = max([0.0, *(at for _, _, at in obs)])
    assert (
        tracker_of(obs, base=high, signature=signature).score(now)
        >= tracker_of(obs, base=low, signature=signature).score(now) - 1e-12
    )


@settings(max_examples=300, deadline=None)
@given(obs=observations.filter(bool), base=bases, signature=signatures, steps=st.lists(st.floats(0, 3 * H)))
def test_without_calls_trust_moves_toward_the_base_as_time_passes(
    obs: list[Observation], base: float, signature: CardSignature, steps: list[float]
) -> None:
    tracker = tracker_of(obs, base=base, signature=signature)
    target = signature_rule(base, signature)
    now = max(at for _, _, at in obs)
    distance = abs(tracker.score(now) - target)
    for step in steps:
        now += step
        closer = abs(tracker.score(now) - target)
        assert closer <= distance + 1e-12
        distance = closer
    assert tracker.score(now + 60 * H) == pytest.approx(target, abs=1e-9)


def test_decay_is_by_elapsed_time_not_by_count() -> None:
    tracker = TrustTracker()
    tracker.record(True, 1.0, 0.0)
    for _ in range(1000):  # many calls at the same instant: the success still weighs 1
        tracker.record(False, 1.0, 0.0)
    assert tracker.evidence(0.0) == pytest.approx(1001)
    assert tracker.score(0.0) == pytest.approx((2.5 + 1) / 1006)
    assert tracker.evidence(H) == pytest.approx(1001 / 2)
    # A call recorded late (it ended before the last one recorded) weighs by its own time.
    late = TrustTracker()
    late.record(True, 1.0, H)
    late.record(False, 1.0, 0.0)
    assert late.evidence(H) == pytest.approx(1.5)


@settings(max_examples=200, deadline=None)
@given(latency=st.floats(0.0, 1e6), slower=st.floats(0.0, 1e6), signature=signatures)
def test_a_slower_success_never_counts_more(latency: float, slower: float, signature: CardSignature) -> None:
    fast, slow = sorted((latency, slower))

    def score(lat: float) -> float:
        return tracker_of([(True, lat, 0.0)] * 10, signature=signature).score(0.0)

    assert score(slow) <= score(fast) + 1e-12


def test_latency_penalty_against_the_target() -> None:
    tracker = TrustTracker(target_latency=2.0)
    assert tracker.quality(True, 0.5) == tracker.quality(True, 2.0) == 1.0  # within the target
    assert tracker.quality(True, 4.0) == pytest.approx(0.75)  # twice the target: half the weight off
    assert tracker.quality(True, math.inf) == pytest.approx(0.5)  # a success counts at least 1 - W
    assert tracker.quality(False, 0.1) == 0.0
    assert TrustTracker(latency_weight=0.0).quality(True, 1e9) == 1.0
    fast = tracker_of([(True, 1.0, 0.0)] * 20, target_latency=2.0).score(0.0)
    slow = tracker_of([(True, 20.0, 0.0)] * 20, target_latency=2.0).score(0.0)
    assert slow < fast and slow >= DEFAULT_TRUST_FLOOR  # slow but reliable stays routable


def test_signature_rules() -> None:
    perfect = [(True, 0.1, 0.0)] * 1000
    assert tracker_of(perfect, signature="verified").score(0.0) == pytest.approx(1.0)
    assert tracker_of(perfect, signature="unsigned").score(0.0) == pytest.approx(UNSIGNED_CEILING)
    assert tracker_of(perfect, signature="invalid").score(0.0) == pytest.approx(INVALID_CEILING)
    assert TrustTracker(base=1.0, signature="verified").score(0.0) == 1.0  # clamped
    assert TrustTracker(base=0.0, signature="invalid").score(0.0) == 0.0
    tracker = TrustTracker(signature="verified")
    tracker.signature = "invalid"  # the card re-checked: the cap applies at once
    assert tracker.score(0.0) == pytest.approx(INVALID_CEILING)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base": 1.5},
        {"base": -0.1},
        {"base": math.nan},
        {"half_life": 0.0},
        {"half_life": math.inf},
        {"target_latency": -1.0},
        {"prior_weight": 0.0},
        {"latency_weight": 2.0},
        {"signature": "trusted"},
    ],
)
def test_parameters_out_of_range_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        TrustTracker(**kwargs)  # type: ignore[arg-type]


def test_invalid_observations_and_trust_values_are_refused() -> None:
    tracker = TrustTracker()
    for latency, now in ((-1.0, 0.0), (math.nan, 0.0), (1.0, math.nan), (1.0, math.inf)):
        with pytest.raises(ValueError):
            tracker.record(True, latency, now)
    assert tracker.evidence(0.0) == 0.0
    for bad in (-0.1, 1.01, math.nan, math.inf):
        with pytest.raises(ValueError):
            check_floor(bad)
        with pytest.raises(ValueError):
            InstanceState("ext-1", "available", 0, 1, trust=bad)
    assert InstanceState("ext-1", "available", 0, 1, trust=0.0).trust == 0.0


# -- routing in a local view ------------------------------------------------------------

Instance = tuple[dict[str, float], str, int, float | None]
"""(capabilities, status, load, trust)."""


def view_of(instances: list[Instance], floor: float = DEFAULT_TRUST_FLOOR) -> LocalView:
    view = LocalView(Registry(aioredis.Redis(), namespace="unit"), trust_floor=floor)
    view.connected = True
    for i, (caps, status, load, trust) in enumerate(instances):
        view.upsert(
            AgentProfile(
                agent_id=f"i-{i}",
                name="w",
                capabilities=[AgentCapability(id=c, proficiency=p) for c, p in caps.items()],
                status=status,  # type: ignore[arg-type]
                load=load,
                capacity=10,
                trust=trust,
            )
        )
    return view


def weighted(caps: dict[str, float], required: list[str], trust: float | None) -> float:
    return match_score(caps, required) * (1.0 if trust is None else trust)


@settings(max_examples=400, deadline=None)
@given(
    instances=st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from("abcd"), st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0]), min_size=1),
            st.sampled_from(["available", "available", "busy", "offline"]),
            st.integers(0, 10),
            st.sampled_from([None, None, 0.0, 0.1, 0.2, 0.5, 0.8, 1.0]),
        ),
        max_size=40,
    ),
    required=st.lists(st.sampled_from("abcde"), min_size=1, max_size=3),
    floor=st.sampled_from([0.0, 0.2, 0.5]),
)
def test_the_view_picks_the_best_match_score_times_trust_above_the_floor(
    instances: list[Instance], required: list[str], floor: float
) -> None:
    view = view_of(instances, floor)
    chosen = view.best(required)
    candidates = [
        (weighted(caps, required, trust), status, -load / 10)
        for caps, status, load, trust in instances
        if status != "offline" and (trust is None or trust >= floor) and weighted(caps, required, trust) > 0
    ]
    available = [c for c in candidates if c[1] == "available"]
    if chosen is None:
        assert not candidates
        return
    i = int(chosen.agent_id.split("-")[1])
    caps, status, load, trust = instances[i]
    assert trust is None or trust >= floor
    if available:
        assert status == "available"
        assert weighted(caps, required, trust) == max(c[0] for c in available)
    else:
        assert status == "busy"
        assert (weighted(caps, required, trust), -load / 10) == max((c[0], c[2]) for c in candidates)
    # The ordered listing agrees: trusted enough, best weighted score first.
    for capability in required:
        found = view.find_agents_with_capability(capability)
        expected = {
            f"i-{j}"
            for j, (c, s, _, t) in enumerate(instances)
            if capability in c and s == "available" and (t is None or t >= floor)
        }
        assert {p.agent_id for p in found} == expected
        scores = [weighted(p.proficiencies(), [capability], p.trust) for p in found]
        assert scores == sorted(scores, reverse=True)


def test_a_heartbeat_without_trust_keeps_it_and_an_event_sets_or_clears_it() -> None:
    view = view_of([({"x": 0.9}, "available", 0, 0.1), ({"x": 0.5}, "available", 0, None)])
    assert view.best(["x"]).agent_id == "i-1"  # type: ignore[union-attr]
    assert view.get("i-0") is not None  # by instance id it is still there: naming it reaches it
    view.set_state("i-0", "available", 1, 10)  # a state change of the runtime's own instance
    assert view.get("i-0").profile.trust == 0.1  # type: ignore[union-attr]
    view.set_state("i-0", "available", 1, 10, 0.9)
    assert view.best(["x"]).agent_id == "i-0"  # type: ignore[union-attr]  # 0.81 > 0.5
    view.set_state("i-0", "available", 1, 10, None)
    assert view.get("i-0").profile.trust is None  # type: ignore[union-attr]
