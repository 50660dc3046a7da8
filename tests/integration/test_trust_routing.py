"""Routing by capability weighed by trust, against a real Redis server: the registry's server-side
search, its listings and a local view following it (and, for NO_CAPABLE_AGENT, a runtime on NATS)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec
import pytest

from a2a import Agent, AgentCapability, Context, Runtime, Settings, by_capability
from a2a.errors import NoCapableAgent
from discovery import AgentProfile, InstanceState, LocalView, Registry, TrustTracker

pytestmark = pytest.mark.anyio

BUS = "bus-1a2b3c4d"
"""An agent of the deployment: it publishes no trust score (trusted as 1)."""
EXT = "ext-1a2b3c4d"
"""An external peer's proxy instance: it publishes a trust score."""


def profile(agent_id: str, caps: dict[str, float], trust: float | None = None) -> AgentProfile:
    return AgentProfile(
        agent_id=agent_id,
        name=agent_id.rsplit("-", 1)[0],
        capabilities=[AgentCapability(id=c, proficiency=p) for c, p in caps.items()],
        capacity=4,
        trust=trust,
        card_signature=None if trust is None else "verified",
    )


@dataclass
class Deployment:
    registry: Registry
    view: LocalView

    @property
    def redis(self) -> Any:
        return self.registry.redis

    async def best(self, *capabilities: str) -> tuple[str | None, str | None]:
        """The registry's choice and the view's."""
        found = await self.registry.find_best_agent(capabilities)
        entry = self.view.best(capabilities)
        return (found.agent_id if found else None, entry.agent_id if entry else None)

    async def listed(self, capability: str) -> tuple[list[str], list[str]]:
        """The registry's ordered listing and the view's."""
        found = await self.registry.find_agents_with_capability(capability)
        return [p.agent_id for p in found], [
            p.agent_id for p in self.view.find_agents_with_capability(capability)
        ]


@pytest.fixture
async def deployment(redis_url: str, namespace: str) -> AsyncIterator[Deployment]:
    registry = Registry.from_url(redis_url, namespace=namespace, heartbeat_interval=0.5)
    view = LocalView(registry)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        with anyio.fail_after(5):
            await view.ready.wait()
        yield Deployment(registry, view)
        tg.cancel_scope.cancel()
    await registry.aclose()


async def until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


def trust_in_view(view: LocalView, agent_id: str) -> float | None:
    entry = view.get(agent_id)
    return None if entry is None else entry.profile.trust


async def test_a_less_trusted_peer_with_higher_proficiency_loses_to_a_trusted_one(
    deployment: Deployment,
) -> None:
    d = deployment
    await d.registry.register_many(
        [profile(EXT, {"x": 0.9, "y": 0.9}, trust=0.5), profile(BUS, {"x": 0.7, "y": 0.6})]
    )
    await until(lambda: d.view.get(EXT) is not None and d.view.get(BUS) is not None)
    assert trust_in_view(d.view, EXT) == 0.5 and trust_in_view(d.view, BUS) is None
    assert await d.best("x") == (BUS, BUS)  # 0.9 * 0.5 = 0.45 < 0.7 * 1
    assert await d.best("x", "y") == (BUS, BUS)  # 0.45 < 0.65
    found = await d.registry.find_best_agent(["x"])
    assert found is not None and found.score == pytest.approx(0.7)
    assert await d.listed("x") == ([BUS, EXT], [BUS, EXT])
    # Listed and read back, the external instance carries its trust and card state.
    got = await d.registry.get(EXT)
    assert got is not None and got.trust == 0.5 and got.card_signature == "verified"
    # A peer trusted enough wins on proficiency: 0.9 * 0.9 = 0.81 > 0.7.
    await d.registry.register(profile("ext-2b3c4d5e", {"x": 0.9}, trust=0.9))
    await until(lambda: d.view.get("ext-2b3c4d5e") is not None)
    assert await d.best("x") == ("ext-2b3c4d5e", "ext-2b3c4d5e")
    assert await d.listed("x") == (["ext-2b3c4d5e", BUS, EXT], ["ext-2b3c4d5e", BUS, EXT])


async def test_a_peer_under_the_floor_is_skipped_but_reachable_by_name(deployment: Deployment) -> None:
    d = deployment
    assert d.registry.trust_floor == d.view.trust_floor == 0.2
    await d.registry.register(profile(EXT, {"x": 1.0}, trust=0.1))
    await until(lambda: d.view.get(EXT) is not None)
    assert await d.best("x") == (None, None)
    assert await d.listed("x") == ([], [])
    assert d.view.get(EXT) is not None  # routing to the instance by its id is unaffected
    # The floor is a parameter: lower it and the peer is a candidate again.
    found = await d.registry.find_best_agent(["x"], trust_floor=0.05)
    assert found is not None and found.agent_id == EXT and found.score == pytest.approx(0.1)
    assert [p.agent_id for p in await d.registry.find_agents_with_capability("x", trust_floor=0.1)] == [EXT]
    lenient = LocalView(d.registry, trust_floor=0.0)
    lenient.replace_all(await d.registry.list_agents())
    assert lenient.best(["x"]) is not None
    with pytest.raises(ValueError):
        await d.registry.find_best_agent(["x"], trust_floor=1.5)


async def test_a_heartbeat_updates_the_score_and_the_ranking_follows(deployment: Deployment) -> None:
    d = deployment
    tracker = TrustTracker(signature="verified")  # 0.5 + 0.1 before any call

    async def beat() -> float:
        # A view reads a change of trust back before applying it (at most once per heartbeat
        # interval): the deployment's instance beats too, so it outlives the waits.
        trust = round(tracker.score(time.monotonic()), 6)
        states = [InstanceState(EXT, "available", 0, 4, trust=trust), InstanceState(BUS, "available", 0, 4)]
        assert await d.registry.heartbeat(states) == []
        await until(lambda: trust_in_view(d.view, EXT) == pytest.approx(trust))
        return trust

    await d.registry.register_many([profile(EXT, {"x": 0.9}, trust=0.6), profile(BUS, {"x": 0.7})])
    await until(lambda: d.view.get(BUS) is not None)
    assert await beat() == pytest.approx(0.6)
    assert await d.best("x") == (BUS, BUS)  # 0.54 < 0.7
    for _ in range(50):
        tracker.record(True, 0.2, time.monotonic())
    assert await beat() == 1.0
    assert await d.best("x") == (EXT, EXT)  # 0.9 > 0.7
    assert await d.listed("x") == ([EXT, BUS], [EXT, BUS])
    for _ in range(200):
        tracker.record(False, 30.0, time.monotonic())
    trust = await beat()
    assert 0.2 <= trust < 0.7 / 0.9
    assert await d.best("x") == (BUS, BUS)
    tracker.signature = "invalid"  # its card no longer verifies: capped under the floor
    assert await beat() < 0.2
    assert await d.listed("x") == ([BUS], [BUS])
    await d.registry.heartbeat([InstanceState(BUS, "offline", 0, 4)])
    await until(lambda: d.view.get(BUS) is not None and d.view.get(BUS).profile.status == "offline")  # type: ignore[union-attr]
    assert await d.best("x") == (None, None)
    # A heartbeat without trust removes it: the instance is trusted as an agent of the deployment.
    await d.registry.heartbeat([InstanceState(EXT, "available", 0, 4)])
    await until(lambda: d.view.get(EXT) is not None and trust_in_view(d.view, EXT) is None)
    assert (await d.registry.get(EXT)).trust is None  # type: ignore[union-attr]
    assert await d.best("x") == (EXT, EXT)


HOSTILE_TRUST: dict[str, bytes] = {
    "above 1": b"7",
    "just above 1": b"1.0000001",
    "negative": b"-0.5",
    "not a number": b"x",
    "empty": b"",
    "NaN": b"nan",
    "infinity": b"inf",
    "exponent": b"1e-1",
    "hex": b"0x1",
    "two points": b"0.5.5",
    "leading space": b" 0.5",
    "not UTF-8": b"\xff",
    "over the field bound": b"0." + b"1" * 100,
}


@pytest.mark.parametrize("kind", HOSTILE_TRUST)
async def test_a_hostile_trust_value_in_redis_is_refused_and_counted(
    deployment: Deployment, kind: str
) -> None:
    d = deployment
    await d.registry.register(profile(BUS, {"x": 0.5}))
    await until(lambda: d.view.get(BUS) is not None)
    # Written the way a user with write access to the hash would, then announced.
    static = msgspec.json.encode(profile(EXT, {"x": 1.0}))
    fields = {"name": "ext", "status": "available", "load": 0, "capacity": 4, "lastSeen": 1}
    await d.redis.hset(
        d.registry.keys.instance(EXT), mapping={**fields, "profile": static, "trust": HOSTILE_TRUST[kind]}
    )
    await d.redis.sadd(d.registry.keys.instances, EXT)
    await d.redis.zadd(d.registry.keys.capability("x"), {EXT: 1.0})
    await d.redis.publish(d.registry.keys.events, msgspec.json.encode({"e": "reg", "id": EXT}))
    await until(lambda: d.registry.rejected >= 1)  # the view's read of the entry refused it
    assert d.view.get(EXT) is None
    assert await d.registry.get(EXT) is None
    assert [p.agent_id for p in await d.registry.list_agents()] == [BUS]
    before = d.registry.rejected
    assert await d.best("x") == (BUS, BUS)  # the server-side search skipped it...
    assert d.registry.rejected == before + 1  # ...and said so
    assert await d.listed("x") == ([BUS], [BUS])
    assert set(d.registry.rejects.by_kind) <= {"trust", "size"}
    # A forged heartbeat event with such a value is refused by the view alike.
    await d.redis.publish(
        d.registry.keys.events,
        b'{"e": "st", "id": "' + BUS.encode() + b'", "status": "available", "trust": 7}',
    )
    await until(lambda: d.view.rejected >= 1)
    assert trust_in_view(d.view, BUS) is None


# -- through a runtime: NO_CAPABLE_AGENT, and calls by name ---------------------------------

peer = Agent("peer", capabilities=[AgentCapability(id="ext.answer", proficiency=0.9)])


@peer.action("answer")
async def _answer(ctx: Context, params: dict[str, Any]) -> Any:
    return {"by": ctx.instance_id}


@pytest.mark.integration
async def test_the_only_capable_peer_under_the_floor_gives_no_capable_agent(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracker = TrustTracker(signature="invalid")  # its card's signature failed: at most 0.1
    async with Runtime(settings) as rt:
        (host,) = await rt.serve(peer)
        assert rt.view is not None
        state = host.state

        def with_trust() -> InstanceState:  # what a proxy instance's heartbeat carries
            s = state()
            return InstanceState(
                s.agent_id, s.status, s.load, s.capacity, trust=tracker.score(time.monotonic())
            )

        monkeypatch.setattr(host, "state", with_trust)
        view = rt.view
        await until(lambda: trust_in_view(view, host.instance_id) is not None, timeout=5)
        with pytest.raises(NoCapableAgent):
            await rt.call(by_capability("ext.answer"), "answer", {})
        assert await rt.call("peer", "answer", {}) == {"by": host.instance_id}  # by name: unaffected
        tracker.signature = "verified"
        await until(lambda: (trust_in_view(view, host.instance_id) or 0.0) >= 0.2, timeout=5)
        assert await rt.call(by_capability("ext.answer"), "answer", {}) == {"by": host.instance_id}
