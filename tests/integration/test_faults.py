"""Fault injection against server processes the tests own: kills, restarts, outages, bad input."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import nats
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a import A2AError, Runtime, Settings, by_capability
from a2a.dev.servers import NatsServer, RedisServer
from a2a.errors import PayloadTooLarge
from bus import codec
from bus.errors import error_from_info
from bus.wire import PROTOCOL_VERSION, Envelope, ErrorEnvelope, ResponseEnvelope
from discovery import Registry
from tests.helpers import AgentProcess

pytestmark = pytest.mark.integration


@dataclass
class Outcome:
    started: float
    ended: float
    timeout: float
    error: str | None


async def stream_of_calls(
    rt: Runtime, call: Any, *, workers: int, seconds: float, timeout: float, events: dict[float, Any]
) -> list[Outcome]:
    """``workers`` loops calling ``call(timeout)`` for ``seconds``; ``events`` fire at their offsets."""
    outcomes: list[Outcome] = []
    start = anyio.current_time()
    stop = start + seconds

    async def worker() -> None:
        while anyio.current_time() < stop:
            began = anyio.current_time()
            error = None
            try:
                await call(timeout)
            except A2AError as exc:
                error = exc.code
            outcomes.append(Outcome(began - start, anyio.current_time() - start, timeout, error))

    async def fire() -> None:
        for at, action in sorted(events.items()):
            await anyio.sleep(max(0.0, start + at - anyio.current_time()))
            await anyio.to_thread.run_sync(action)

    async with anyio.create_task_group() as tg:
        for _ in range(workers):
            tg.start_soon(worker)
        tg.start_soon(fire)
    return outcomes


def settings_for(nats_url: str, redis_url: str, namespace: str, **extra: Any) -> Settings:
    return Settings(
        nats_url=nats_url, redis_url=redis_url, namespace=namespace, heartbeat_interval=0.25, **extra
    )


@pytest.mark.anyio
async def test_nats_killed_and_restarted_during_a_stream_of_calls(redis_url: str, namespace: str) -> None:
    with NatsServer() as server:
        s = settings_for(server.url, redis_url, namespace)
        with AgentProcess(s, "tests.agents:echo") as agent:
            async with Runtime(s) as rt:
                await rt.wait_for_agents(["echo"], timeout=20)

                async def call(timeout: float) -> Any:
                    return await rt.call("echo", "sleep", {"seconds": 0.05}, timeout=timeout)

                outcomes = await stream_of_calls(
                    rt,
                    call,
                    workers=8,
                    seconds=7.0,
                    timeout=2.0,
                    events={1.5: server.kill, 3.0: server.restart},
                )
                assert len(rt.bus.pending) == 0
            assert agent.proc is not None and agent.proc.poll() is None  # never restarted
    assert outcomes
    for o in outcomes:  # every call ended with a result or a typed error by its deadline + 1 s
        assert o.ended - o.started <= o.timeout + 1.0, o
        assert o.error in (None, "DEADLINE_EXCEEDED", "UNAVAILABLE", "NO_RESPONDERS", "AGENT_LOST"), o
    after = [o for o in outcomes if o.started > 5.0]
    assert after and all(o.error is None for o in after), after  # calls succeed again after reconnect
    failed = sum(o.error is not None for o in outcomes)
    print(f"\nNATS restart: {len(outcomes)} calls, {failed} ended with a typed error during the outage")


@pytest.mark.anyio
async def test_a_cluster_node_killed_under_load_loses_no_call(redis_url: str, namespace: str) -> None:
    nodes = [NatsServer(cluster_name="faults") for _ in range(3)]
    routes = [n.cluster_url or "" for n in nodes]
    for node in nodes:
        node.routes = routes
    try:
        for node in nodes:
            node.start()
        # Client and agent both start on node 1, the one that dies: both must fail over to
        # the nodes they learn of from the cluster, and calls in flight must still end well.
        s = settings_for(nodes[0].url, redis_url, namespace)
        victim = nodes[0]
        with AgentProcess(s, "tests.agents:echo"):
            async with Runtime(s) as rt:
                await rt.wait_for_agents(["echo"], timeout=20)
                assert await rt.call("echo", "echo", {"warm": 1}) == {"warm": 1}

                async def call(timeout: float) -> Any:
                    return await rt.call("echo", "sleep", {"seconds": 0.02}, timeout=timeout)

                outcomes = await stream_of_calls(
                    rt, call, workers=16, seconds=5.0, timeout=8.0, events={1.5: victim.kill}
                )
                resent = rt.bus.stats.resent
    finally:
        for node in nodes:
            node.cleanup()
    errors = [o for o in outcomes if o.error is not None]
    print(
        f"\ncluster failover: {len(outcomes)} calls, {len(errors)} errors, "
        f"{resent} re-sent after reconnecting"
    )
    assert len(outcomes) > 100 and errors == []


KILL_WINDOW = 1.6
"""The kill is scheduled at 1.5 s; a call sent until this late may still reach the dead instance."""


@pytest.mark.anyio
async def test_a_pooled_instance_killed_mid_call_the_others_keep_serving(
    nats_url: str, redis_url: str, namespace: str
) -> None:
    s = settings_for(nats_url, redis_url, namespace)
    with AgentProcess(s, "tests.agents:echo") as first, AgentProcess(s, "tests.agents:echo"):
        async with Runtime(s) as rt:
            with anyio.fail_after(20):
                while len([e for e in rt.view.entries() if e.profile.name == "echo"]) < 2:  # type: ignore[union-attr]
                    await anyio.sleep(0.05)

            async def call(timeout: float) -> Any:
                return await rt.call("echo", "sleep", {"seconds": 0.3}, timeout=timeout)

            outcomes = await stream_of_calls(
                rt, call, workers=8, seconds=5.0, timeout=20.0, events={1.5: first.kill}
            )
    lost = [o for o in outcomes if o.error is not None]
    assert all(o.error == "AGENT_LOST" for o in lost), lost
    # In flight at the kill, or sent in the moment before the server saw the connection close
    # (the queue group may still hand a call to the dead instance): each ends within seconds.
    late = [o for o in lost if not (o.started < KILL_WINDOW < o.ended and o.ended - 1.5 < 3.0)]
    assert late == [], lost
    assert len(lost) <= 9
    after = [o for o in outcomes if o.started > 2.0]
    assert after and all(o.error is None for o in after)


@pytest.mark.anyio
async def test_redis_stopped_routing_continues_and_the_registry_recovers(
    nats_url: str, namespace: str
) -> None:
    with RedisServer() as redis:
        s = settings_for(nats_url, redis.url, namespace)
        with AgentProcess(s, "tests.agents:echo") as agent:
            async with Runtime(s) as rt:
                await rt.wait_for_agents(["echo"], timeout=20)
                route = by_capability("text")
                assert (await rt.call(route, "whoami"))["pid"] == agent.pid
                redis.stop()
                deadline = anyio.current_time() + 8 * s.heartbeat_interval
                while anyio.current_time() < deadline:  # well past the entries' 3-heartbeat TTL
                    assert (await rt.call(route, "whoami"))["pid"] == agent.pid
                    await anyio.sleep(0.05)
                assert rt.view is not None and not rt.view.connected
                resyncs = rt.view.resyncs
                redis.restart()  # comes back empty
                assert rt.registry is not None
                with anyio.fail_after(10):
                    while not [p for p in await _agents_or_none(rt) if p.name == "echo"]:
                        await anyio.sleep(0.1)
                    while rt.view.resyncs == resyncs or rt.view.best(["text"]) is None:
                        await anyio.sleep(0.05)
                best = await rt.registry.find_best_agent(["text"])
                assert best is not None and best.agent_id.startswith("echo-")
                assert (await rt.call(route, "whoami"))["pid"] == agent.pid
            assert agent.proc is not None and agent.proc.poll() is None


@pytest.mark.anyio
async def test_a_restarted_redis_costs_no_command_on_a_pooled_connection(namespace: str) -> None:
    """Connections pooled before a restart are dead after it: the first command on each
    reconnects and is sent again, rather than failing (and a history write being dropped)."""
    with RedisServer() as redis:
        registry = Registry.from_url(redis.url, namespace=namespace)
        try:
            client = registry.redis
            async with anyio.create_task_group() as tg:  # eight connections, idle in the pool
                for _ in range(8):
                    tg.start_soon(client.blpop, ["nothing"], 0.05)
            redis.restart()
            await anyio.sleep(0.2)  # the client's loop hears the old connections close
            failed: list[BaseException] = []

            async def one(i: int) -> None:
                try:
                    async with client.pipeline(transaction=False) as pipe:
                        pipe.rpush("after", i)
                        await pipe.execute()
                except Exception as exc:
                    failed.append(exc)

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(one, i)
            assert failed == []
            assert sorted(int(v) for v in await client.lrange("after", 0, -1)) == list(range(8))
        finally:
            await registry.aclose()


async def _agents_or_none(rt: Runtime) -> list[Any]:
    assert rt.registry is not None
    try:
        return await rt.registry.list_agents()
    except A2AError:
        return []


@pytest.mark.anyio
async def test_oversized_payloads_get_a_clear_error_on_the_sending_side(
    redis_url: str, namespace: str
) -> None:
    with NatsServer(max_payload=32 * 1024) as server:
        s = settings_for(server.url, redis_url, namespace)
        with AgentProcess(s, "tests.agents:echo"):
            async with Runtime(s) as rt:
                await rt.wait_for_agents(["echo"], timeout=20)
                with pytest.raises(PayloadTooLarge) as sent:
                    await rt.call("echo", "echo", {"blob": "x" * 40_000})
                assert sent.value.details["limit"] == 32 * 1024 and not sent.value.remote
                with pytest.raises(PayloadTooLarge) as replied:
                    await rt.call("echo", "big", {"size": 40_000})
                assert replied.value.remote and replied.value.agent == "echo"
                assert await rt.call("echo", "big", {"size": 100}) == "x" * 100
            limited = Settings(**{**{f: getattr(s, f) for f in s.__struct_fields__}, "max_payload": 1000})
            async with Runtime(limited) as rt:
                with pytest.raises(PayloadTooLarge) as configured:
                    await rt.call("echo", "echo", {"blob": "x" * 2000})
                assert configured.value.details["limit"] == 1000


# -- bad input ---------------------------------------------------------------------------

CODES = {
    "INVALID_ENVELOPE",
    "UNSUPPORTED_VERSION",
    "UNKNOWN_ACTION",
    "INVALID_PARAMS",
    "MAX_HOPS_EXCEEDED",
    "MAX_DEPTH_EXCEEDED",
    "CYCLE_DETECTED",
    "FAN_OUT_EXCEEDED",
    "BUDGET_EXCEEDED",
    "DEADLINE_EXCEEDED",
    "AGENT_ERROR",
    "PERMISSION_DENIED",
}

VALID = {
    "type": "request",
    "messageId": "m",
    "sourceAgentId": "fuzz",
    "targetAgentId": "echo",
    "conversationId": "c",
    "protocolVersion": PROTOCOL_VERSION,
    "payload": {"action": "echo", "parameters": {"k": 1}},
    "metadata": {"timestamp": 1, "correlationId": "fuzz", "ttlMs": 2000},
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


MUTABLE_FIELDS = [
    ("type",),
    ("messageId",),
    ("protocolVersion",),
    ("payload", "action"),
    ("payload", "parameters"),
    ("metadata", "hopCount"),
    ("metadata", "ttlMs"),
    ("metadata", "depth"),
    ("metadata", "priority"),
    ("targetAgentId",),
]


@st.composite
def mutated_envelopes(draw: st.DrawFn) -> bytes:
    env = json.loads(json.dumps(VALID))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(MUTABLE_FIELDS))
        node = env
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            if draw(st.booleans()):
                node.pop(path[-1], None)
            else:
                node[path[-1]] = draw(json_values)
    return json.dumps(env).encode()


fuzz_inputs = st.one_of(
    st.binary(max_size=512),
    json_values.map(lambda v: json.dumps(v).encode()),
    mutated_envelopes(),
)


@dataclass
class FuzzTarget:
    portal: BlockingPortal
    nc: Any
    subject: str
    good_calls: list[Any]
    stop: anyio.Event


@pytest.fixture(scope="module")
def fuzz_target(nats_url: str, redis_url: str) -> Iterator[FuzzTarget]:
    namespace = "fuzz" + hex(random.getrandbits(32))[2:]
    s = settings_for(nats_url, redis_url, namespace)
    with (
        AgentProcess(s, "tests.agents:echo") as agent,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Runtime(s)) as rt,
    ):
        portal.call(rt.wait_for_agents, ["echo"])
        nc = portal.call(nats.connect, nats_url)
        good: list[Any] = []
        stop = portal.call(anyio.Event)

        async def valid_traffic() -> None:  # well-formed calls running alongside the fuzzing
            i = 0
            while not stop.is_set():
                try:
                    good.append(await rt.call("echo", "echo", {"i": i}) == {"i": i})
                except A2AError as exc:
                    good.append(exc)
                i += 1

        portal.start_task_soon(valid_traffic)
        yield FuzzTarget(portal, nc, f"a2a.{namespace}.agent.echo.fuzz", good, stop)
        portal.call(stop.set)
        time.sleep(0.2)
        portal.call(nc.close)
        assert agent.proc is not None and agent.proc.poll() is None, "the agent process died"
    assert good and all(g is True for g in good), [g for g in good if g is not True][:5]


def _decode_reply(data: bytes) -> Envelope:
    return codec.decode_envelope(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=fuzz_inputs)
def test_fuzzed_bytes_and_envelopes_get_typed_errors_and_harm_nothing(
    fuzz_target: FuzzTarget, data: bytes
) -> None:
    async def send() -> bytes:
        msg = await fuzz_target.nc.request(fuzz_target.subject, data, timeout=5)
        return msg.data  # type: ignore[no-any-return]

    reply = _decode_reply(fuzz_target.portal.call(send))
    if isinstance(reply, ErrorEnvelope):
        assert reply.payload.error is not None
        error = error_from_info(reply.payload.error)
        assert error.code in CODES, error
        assert "Traceback" not in error.message
        if error.code == "INVALID_ENVELOPE":
            assert error.details.get("field")
    else:
        assert isinstance(reply, ResponseEnvelope)  # the mutation happened to stay valid


def test_the_fuzz_run_left_well_formed_traffic_unharmed(fuzz_target: FuzzTarget) -> None:
    """Checked in the fixture's teardown: every concurrent valid call returned its result."""
    assert fuzz_target.good_calls, "valid traffic ran alongside the fuzzing"
