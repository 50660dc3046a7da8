"""Whatever bytes reach the registry's readers, every runtime keeps routing.

Each attack here used to end every agent process of a namespace: a view's task raised
out of its task group. Now a bad item is skipped and counted, and routing carries on
from the valid entries. All against a real redis-server.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec
import pytest

from a2a import Agent
from bus.rejects import Rejects
from discovery import AgentCapability, AgentProfile, InstanceState, LocalView, Registry
from tests.security.redis_acl import profile, until

pytestmark = pytest.mark.anyio

GOOD = "good-1a2b3c4d"


@dataclass
class Harness:
    registry: Registry
    view: LocalView

    @property
    def redis(self) -> Any:
        return self.registry.redis

    async def publish(self, payload: bytes | str) -> None:
        await self.redis.execute_command("PUBLISH", self.registry.keys.events, payload)

    async def settle(self, load: int) -> None:
        """Wait until every event published before is applied: a real heartbeat carrying ``load``."""
        await self.registry.heartbeat([InstanceState(GOOD, "available", load, 10)])
        await until(lambda: (e := self.view.get(GOOD)) is not None and e.profile.load == load)

    def routes(self) -> bool:
        chosen = self.view.best(["x"])
        return chosen is not None and chosen.agent_id == GOOD


@pytest.fixture
async def harness(redis_url: str, namespace: str) -> AsyncIterator[Harness]:
    registry = Registry.from_url(redis_url, namespace=namespace, heartbeat_interval=1.0)
    await registry.register(profile(GOOD, {"x": 0.5}))
    view = LocalView(registry)
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        with anyio.fail_after(5):
            await view.ready.wait()
        await until(lambda: view.get(GOOD) is not None)
        yield Harness(registry, view)
        assert view.connected, "the view lost its connection"
        tg.cancel_scope.cancel()
    await registry.aclose()


# -- events ------------------------------------------------------------------------------

BAD_EVENTS: dict[str, bytes] = {
    "two bytes, not UTF-8": b"\xff\xfe",
    "empty": b"",
    "not JSON": b"garbage",
    "JSON null": b"null",
    "array": b"[1, 2]",
    "no id": b'{"e": "st"}',
    "id not a string": b'{"e": "reg", "id": 5}',
    "id not a name": b'{"e": "st", "id": "../../x y", "status": "available"}',
    "unknown status": b'{"e": "st", "id": "' + GOOD.encode() + b'", "status": "evil"}',
    "negative load": b'{"e": "st", "id": "' + GOOD.encode() + b'", "status": "busy", "load": -1}',
    "load not a number": b'{"e": "st", "id": "' + GOOD.encode() + b'", "status": "busy", "load": "9"}',
    "huge number": b'{"e": "st", "id": "'
    + GOOD.encode()
    + b'", "status": "busy", "load": 1'
    + b"0" * 400
    + b"}",
    "non-UTF-8 inside a string": b'{"e": "down", "id": "good\xff"}',
    "deep nesting": b'{"e": "st", "id": "a-1", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "long id": b'{"e": "down", "id": "' + b"a" * 10_000 + b'"}',
}


@pytest.mark.parametrize("kind", BAD_EVENTS)
async def test_a_malformed_event_is_counted_and_routing_goes_on(harness: Harness, kind: str) -> None:
    await harness.publish(BAD_EVENTS[kind])
    await harness.settle(load=3)
    assert harness.view.rejected == 1
    assert harness.routes()
    entry = harness.view.get(GOOD)
    assert entry is not None and entry.profile.status == "available"  # the bad event changed nothing


async def test_two_thousand_random_payloads_leave_the_view_routing(harness: Harness) -> None:
    rng = random.Random(20240604)
    pieces: list[Any] = [GOOD, "st", "reg", "down", "busy", "available", -1, 2**70, None, "\u2028", [], {}]
    start = anyio.current_time()
    for i in range(2000):
        if i % 2:
            payload = rng.randbytes(rng.randint(0, 64))
        else:  # almost an event: the right keys with random values
            event = {key: rng.choice(pieces) for key in ("e", "id", "status", "load", "capacity")}
            payload = msgspec.json.encode(event)
            if i % 4 == 0:
                cut = rng.randint(0, len(payload))
                payload = payload[:cut] + rng.randbytes(2) + payload[cut:]
        await harness.publish(payload)
    await harness.settle(load=7)
    assert anyio.current_time() - start < 20
    assert harness.view.rejected > 1000
    assert harness.routes() or harness.view.get(GOOD) is not None  # a random "busy" may be in force
    await harness.settle(load=1)
    assert harness.routes()


async def test_warnings_about_rejects_are_rate_limited(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="a2a.discovery"):
        for _ in range(50):
            await harness.publish(b"\x00")
        await harness.settle(load=2)
    assert harness.view.rejected == 50
    assert len([r for r in caplog.records if "refused" in r.getMessage()]) == 1


def test_a_suppressed_warning_count_is_reported_with_the_next_one(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    rejects = Rejects(logging.getLogger("test.rejects"), "thing", interval=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="test.rejects"):
        for _ in range(5):
            rejects("event", "bad")
        rejects("profile", "other kind: its own budget")
        now[0] = 11.0
        rejects("event", "bad again")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "thing refused (event): bad",
        "thing refused (profile): other kind: its own budget",
        "thing refused (event): bad again (4 more since the last warning)",
    ]
    assert rejects.total == 7 and rejects.by_kind == {"event": 6, "profile": 1}


# -- instance hashes -----------------------------------------------------------------------

BAD_ID = "bad-1a2b3c4d"


def _profile_json(**changes: Any) -> bytes:
    raw = msgspec.to_builtins(profile(BAD_ID, {"x": 1.0}))
    raw.update(changes)
    return msgspec.json.encode(raw)


BAD_HASHES: dict[str, dict[str, Any]] = {
    "profile not JSON": {"profile": b"garbage"},
    "profile not UTF-8": {"profile": b'{"agentId": "bad-1a2b3c4d", "name": "bad\xff"}'},
    "profile of wrong types": {"profile": _profile_json(capabilities="x")},
    "profile missing the name": {"profile": b'{"agentId": "bad-1a2b3c4d"}'},
    "profile deeply nested": {
        "profile": _profile_json()[:-1] + b', "metadata": {"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}}"
    },
    "capability id with a space": {
        "profile": _profile_json(capabilities=[{"id": "code review", "proficiency": 1.0}])
    },
    "capability id with a newline": {
        "profile": _profile_json(capabilities=[{"id": "x\n", "proficiency": 1.0}])
    },
    "proficiency out of range": {"profile": _profile_json(capabilities=[{"id": "x", "proficiency": 9.0}])},
    "name of another agent": {"profile": _profile_json(name="good")},
    "agentId of another instance": {"profile": _profile_json(agentId=GOOD, name="good")},
    "unknown status": {"status": "evil"},
    "status not UTF-8": {"status": b"\xff"},
    "negative load": {"load": "-5"},
    "negative capacity": {"capacity": "-1"},
    "load not a number": {"load": "lots"},
}


async def _plant(harness: Harness, agent_id: str, fields: dict[str, Any]) -> None:
    """Write a hash the way an attacker with write access would, and announce it."""
    registry = harness.registry
    base = {"name": "bad", "status": "available", "load": 0, "capacity": 10, "lastSeen": 1}
    await harness.redis.hset(
        registry.keys.instance(agent_id), mapping={**base, "profile": _profile_json(), **fields}
    )
    await harness.redis.sadd(registry.keys.instances, agent_id)
    await harness.redis.zadd(registry.keys.capability("x"), {agent_id: 1.0})
    await harness.publish(msgspec.json.encode({"e": "reg", "id": agent_id}))


@pytest.mark.parametrize("kind", BAD_HASHES)
async def test_an_invalid_instance_hash_is_skipped_everywhere(harness: Harness, kind: str) -> None:
    registry = harness.registry
    await _plant(harness, BAD_ID, BAD_HASHES[kind])
    await until(lambda: registry.rejected >= 1)
    assert harness.view.get(BAD_ID) is None and harness.routes()
    assert await registry.get(BAD_ID) is None
    assert [p.agent_id for p in await registry.list_agents()] == [GOOD]
    assert [p.agent_id for p in await registry.find_agents_with_capability("x")] == [GOOD]
    # A view starting now loads the snapshot around the bad entry.
    fresh = LocalView(registry)
    async with anyio.create_task_group() as tg:
        await tg.start(fresh.run)
        with anyio.fail_after(5):
            await fresh.ready.wait()
        assert [e.agent_id for e in fresh.entries()] == [GOOD]
        tg.cancel_scope.cancel()
    await harness.settle(load=4)


async def test_a_valid_entry_under_an_invalid_id_is_skipped(harness: Harness) -> None:
    weird = "bad id"  # not a name: no subject could reach it
    await _plant(harness, weird, {"profile": _profile_json(agentId=weird)})
    await harness.redis.zadd(harness.registry.keys.capability("x"), {weird: 5.0})
    await until(lambda: harness.view.rejected + harness.registry.rejected >= 1)
    assert [p.agent_id for p in await harness.registry.list_agents()] == [GOOD]
    assert await harness.registry.find_best_agent(["x"]) is None  # the best is refused, not raised
    assert harness.routes()


# -- declaring capabilities ------------------------------------------------------------------


@pytest.mark.parametrize(
    "cap_id", ["code review", "tab\there", "", "x" * 129, "glob*", "[x]", "a\\b", "{ns}", "é"]
)
def test_a_capability_the_registry_would_refuse_fails_at_declaration(cap_id: str) -> None:
    with pytest.raises(ValueError, match="invalid capability id") as info:
        Agent("helper", capabilities=[cap_id])
    assert repr(cap_id) in str(info.value) and "letters, digits" in str(info.value)
    with pytest.raises(ValueError, match="invalid capability id"):
        Agent("helper", capabilities=[AgentCapability(id=cap_id)])


def test_every_allowed_character_is_accepted() -> None:
    agent = Agent("helper", capabilities=["code.review", "ns:tool/read-v2_x", "A" * 128])
    assert [c.id for c in agent.capabilities] == ["code.review", "ns:tool/read-v2_x", "A" * 128]
    with pytest.raises(ValueError, match="proficiency"):
        Agent("helper", capabilities=[AgentCapability(id="x", proficiency=1.5)])


async def test_an_instance_registered_with_a_space_in_a_capability_is_refused_not_fatal(
    harness: Harness,
) -> None:
    # A process that skips Agent's check (an older version, a hand-written client).
    rogue = AgentProfile(
        agent_id="helper-1a2b3c4d", name="helper", capabilities=[AgentCapability(id="code review")]
    )
    await harness.registry.register(rogue)
    await until(lambda: harness.registry.rejected >= 1)
    assert harness.view.get(rogue.agent_id) is None and harness.routes()
