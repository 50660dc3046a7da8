"""Runtime behaviour on the in-memory transport (NATS semantics, no server)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from a2a import A2AError, Agent, Context
from a2a.errors import (
    AgentError,
    CycleDetected,
    DeadlineExceeded,
    InvalidParams,
    MaxDepthExceeded,
    MaxHopsExceeded,
    NoResponders,
    PayloadTooLarge,
    UnknownAction,
)
from a2a.testing import TestBroker
from bus import codec
from bus.wire import COMPACT_VERSION, ELIDING_VERSION, PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.agents import echo, relay
from tests.helpers import raw_exchange

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio


async def test_call_returns_the_handler_result(make_runtime: MakeRuntime) -> None:
    server, client = await make_runtime(), await make_runtime()
    await server.serve(echo)
    assert await client.call("echo", "echo", {"a": [1, 2]}) == {"a": [1, 2]}


async def test_typed_errors_name_agent_and_hop(make_runtime: MakeRuntime) -> None:
    server, client = await make_runtime(), await make_runtime()
    await server.serve(echo)
    with pytest.raises(UnknownAction) as unknown:
        await client.call("echo", "nope")
    assert (unknown.value.agent, unknown.value.hop) == ("echo", 1)
    assert unknown.value.details["actions"] == ["big", "echo", "fail", "logged", "sleep", "whoami"]
    with pytest.raises(InvalidParams) as invalid:
        await client.call("echo", "sleep", {"seconds": -1})
    assert invalid.value.details["path"] == "$.seconds"
    with pytest.raises(AgentError) as failed:
        await client.call("echo", "fail", {"message": "disk full"})
    assert failed.value.message == "disk full"  # the exception text, no traceback or repr


async def test_no_responders_comes_back_at_once(make_runtime: MakeRuntime) -> None:
    client = await make_runtime()
    with anyio.fail_after(1):
        with pytest.raises(NoResponders) as info:
            await client.call("ghost", "x", timeout=30)
    assert info.value.agent == "ghost"
    assert len(client.bus.pending) == 0


async def test_deadline_exceeded_at_the_timeout_and_the_callee_is_cancelled(
    make_runtime: MakeRuntime,
) -> None:
    cancelled = anyio.Event()
    slow = Agent("slow")

    @slow.action("wait")
    async def wait(ctx: Context, params: dict[str, Any]) -> None:
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    server, client = await make_runtime(), await make_runtime()
    await server.serve(slow)
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await client.call("slow", "wait", timeout=0.2)
    assert 0.19 <= anyio.current_time() - start < 0.5  # the callee may time out a hair first
    with anyio.fail_after(1):
        await cancelled.wait()  # the cancel notice reached the callee's handler
    assert len(client.bus.pending) == 0


async def test_child_calls_inherit_lineage_and_count_hops(make_runtime: MakeRuntime) -> None:
    server, client = await make_runtime(), await make_runtime()
    await server.serve(echo, relay)
    out = await client.call("relay", "forward", {"target": "echo", "action": "echo", "params": {"x": 1}})
    assert out["result"] == {"x": 1} and out["hop"] == 1 and out["depth"] == 0


async def test_max_hops_refused_by_caller_and_by_callee(make_runtime: MakeRuntime) -> None:
    server, client = await make_runtime(max_hops=1), await make_runtime(max_hops=1)
    await server.serve(echo, relay)
    with pytest.raises(MaxHopsExceeded) as info:
        await client.call("relay", "forward", {"target": "echo", "action": "echo"})
    assert info.value.remote and info.value.agent == "relay"  # refused by relay before sending hop 2
    reply = await _raw_request(client, "echo", hop_count=11, max_hops=10)  # a raw client, no caller check
    assert reply["payload"]["error"]["code"] == "MAX_HOPS_EXCEEDED"


async def test_max_depth_refused_by_caller_and_by_callee(make_runtime: MakeRuntime) -> None:
    server, client = await make_runtime(max_depth=1), await make_runtime(max_depth=1)
    await server.serve(echo, relay)
    with pytest.raises(MaxDepthExceeded):
        await client.call("relay", "forward", {"target": "echo", "action": "echo"})
    reply = await _raw_request(client, "echo", depth=5, max_depth=5, call_chain=["a", "b", "c", "d", "raw"])
    assert reply["payload"]["error"]["code"] == "MAX_DEPTH_EXCEEDED"


async def test_a_callback_into_an_agent_on_the_chain_is_a_cycle(make_runtime: MakeRuntime) -> None:
    server, client = await make_runtime(), await make_runtime()
    await server.serve(relay)
    with anyio.fail_after(2):
        out = await client.call(
            "relay",
            "forward",
            {
                "target": "relay",
                "action": "forward",
                "catch": True,
                "params": {"target": "relay", "action": "forward"},
            },
        )
    assert out == {"error": "CYCLE_DETECTED", "agent": "relay", "hop": 1}
    with pytest.raises(CycleDetected):
        await _raise(_raw_request(client, "relay", depth=2, call_chain=["relay", "raw"]))


async def test_handlers_run_concurrently_up_to_the_limit(make_runtime: MakeRuntime) -> None:
    running = peak = 0
    limited = Agent("limited", max_concurrency=2)

    @limited.action("work")
    async def work(ctx: Context, params: dict[str, Any]) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.05)
        running -= 1

    server, client = await make_runtime(), await make_runtime()
    (host,) = await server.serve(limited)
    statuses = set()
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(client.call, "limited", "work")
        await anyio.sleep(0.02)
        statuses.add(host.status)
    assert peak == 2
    assert statuses == {"busy"} and host.status == "available"


async def test_a_full_queue_refuses_with_overloaded(make_runtime: MakeRuntime) -> None:
    tiny = Agent("tiny", max_concurrency=1, max_queue=1)
    release = anyio.Event()

    @tiny.action("hold")
    async def hold(ctx: Context, params: dict[str, Any]) -> str:
        await release.wait()
        return "done"

    server, client = await make_runtime(), await make_runtime()
    await server.serve(tiny)
    results: list[Any] = []

    async def one() -> None:
        try:
            results.append(await client.call("tiny", "hold", timeout=5))
        except A2AError as exc:
            results.append(exc.code)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(one)
        await anyio.sleep(0.1)
        release.set()
    assert sorted(results) == ["OVERLOADED"] * 3 + ["done"] * 2


async def test_agents_calling_each_other_concurrently_do_not_deadlock(
    make_runtime: MakeRuntime,
) -> None:
    """A (limit 1) waits on B while B (limit 1) waits on A: lent slots keep both moving."""
    a, b = Agent("a", max_concurrency=1), Agent("b", max_concurrency=1)

    @a.action("start")
    async def a_start(ctx: Context, params: dict[str, Any]) -> Any:
        await anyio.sleep(0.05)
        return await ctx.call("b", "leaf")

    @a.action("leaf")
    async def a_leaf(ctx: Context, params: dict[str, Any]) -> str:
        return "a-leaf"

    @b.action("start")
    async def b_start(ctx: Context, params: dict[str, Any]) -> Any:
        await anyio.sleep(0.05)
        return await ctx.call("a", "leaf")

    @b.action("leaf")
    async def b_leaf(ctx: Context, params: dict[str, Any]) -> str:
        return "b-leaf"

    server, client = await make_runtime(), await make_runtime()
    await server.serve(a, b)
    results = {}

    async def run(name: str) -> None:
        results[name] = await client.call(name, "start", timeout=3)

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a")
            tg.start_soon(run, "b")
    assert results == {"a": "b-leaf", "b": "a-leaf"}


async def test_payload_limits_give_typed_errors_on_both_sides(make_runtime: MakeRuntime) -> None:
    big = Agent("big")

    @big.action("make")
    async def make(ctx: Context, params: dict[str, Any]) -> str:
        return "x" * params["size"]

    server, client = await make_runtime(), await make_runtime()
    await server.serve(big)
    with pytest.raises(PayloadTooLarge) as sent:
        await client.call("big", "make", {"size": 1, "pad": "y" * 70_000})
    assert sent.value.details["limit"] == 64 * 1024 and not sent.value.remote
    with pytest.raises(PayloadTooLarge) as replied:
        await client.call("big", "make", {"size": 70_000})
    assert replied.value.remote and replied.value.agent == "big"
    assert await client.call("big", "make", {"size": 10}) == "x" * 10


async def test_unserialisable_results_are_agent_errors(make_runtime: MakeRuntime) -> None:
    odd = Agent("odd")

    @odd.action("get")
    async def get(ctx: Context, params: dict[str, Any]) -> object:
        return object()

    server, client = await make_runtime(), await make_runtime()
    await server.serve(odd)
    with pytest.raises(AgentError, match="not JSON-serialisable"):
        await client.call("odd", "get")


async def test_malformed_messages_get_typed_errors_and_the_agent_keeps_serving(
    make_runtime: MakeRuntime,
) -> None:
    server, client = await make_runtime(), await make_runtime()
    (host,) = await server.serve(echo)
    transport = client.bus.transport
    for raw, field in [(b"not json", "$"), (b'{"type":"request"}', "messageId"), (b"{}", "type")]:
        reply = await _publish_raw(client, client.bus.subjects.agent("echo"), raw)
        assert reply["type"] == "error"
        assert reply["payload"]["error"]["code"] == "INVALID_ENVELOPE"
        assert reply["payload"]["error"]["details"]["field"] == field
    await transport.publish(client.bus.subjects.agent("echo"), b"\x00\x01 no reply subject")
    assert await client.call("echo", "echo", {"still": "alive"}) == {"still": "alive"}
    assert host.stats.invalid == 4


async def test_unsupported_versions_are_refused_naming_the_supported_ones(
    make_runtime: MakeRuntime,
) -> None:
    server, client = await make_runtime(), await make_runtime()
    await server.serve(echo)
    reply = await _raw_request(client, "echo", protocol_version="9.0")
    error = reply["payload"]["error"]
    assert error["code"] == "UNSUPPORTED_VERSION" and error["details"]["supported"] == [
        "1.0",
        "1.1",
        "1.2",
        PROTOCOL_VERSION,
        COMPACT_VERSION,
        ELIDING_VERSION,
    ]


async def test_notifications_reach_one_instance_of_each_subscribed_agent(
    make_runtime: MakeRuntime,
) -> None:
    seen: list[tuple[str, Any]] = []
    done = anyio.Event()
    listeners = []
    for name in ("l1", "l2"):
        agent = Agent(name)

        @agent.on("build.done")
        async def on_done(ctx: Context, params: dict[str, Any], name: str = name) -> None:
            seen.append((name, params))
            if len(seen) == 2:
                done.set()

        listeners.append(agent)
    s1, s2, client = await make_runtime(), await make_runtime(), await make_runtime()
    await s1.serve(*listeners)
    await s2.serve(*listeners)  # second instance of each: queue group per agent
    await client.notify("build.done", {"ok": True})
    with anyio.fail_after(1):
        await done.wait()
    await anyio.sleep(0.05)
    assert sorted(seen, key=lambda x: x[0]) == [("l1", {"ok": True}), ("l2", {"ok": True})]


async def test_late_replies_are_dropped_and_counted(make_runtime: MakeRuntime, broker: Any) -> None:
    client = await make_runtime()
    raw = broker.connect()

    async def late_responder(msg: Any) -> None:
        await anyio.sleep(0.15)
        env = codec.decode_envelope(msg.data)
        reply = {
            "type": "response",
            "messageId": "r",
            "sourceAgentId": "late",
            "targetAgentId": "c",
            "conversationId": env.conversation_id,
            "protocolVersion": PROTOCOL_VERSION,
            "payload": {"action": "x", "result": 1},
            "metadata": {"timestamp": 1, "correlationId": env.metadata.correlation_id},
        }
        await raw.publish(msg.reply, json.dumps(reply).encode())

    await raw.subscribe(client.bus.subjects.agent("late"), late_responder)
    with pytest.raises(DeadlineExceeded):
        await client.call("late", "x", timeout=0.05)
    await anyio.sleep(0.3)
    assert client.bus.pending.late_replies == 1 and len(client.bus.pending) == 0


# -- helpers ---------------------------------------------------------------------------


async def _publish_raw(client: Any, subject: str, data: bytes) -> dict[str, Any]:
    return await raw_exchange(client.bus.transport, subject, data, timeout=2)


async def _raw_request(
    client: Any, agent: str, *, protocol_version: str = PROTOCOL_VERSION, **meta: Any
) -> dict[str, Any]:
    env = RequestEnvelope(
        message_id="m",
        source_agent_id="raw",
        target_agent_id=agent,
        conversation_id="c",
        protocol_version=protocol_version,
        payload=Payload(action="echo", parameters={}),
        metadata=Metadata(timestamp=1, correlation_id="raw1", ttl_ms=2000, **meta),
    )
    return await _publish_raw(client, client.bus.subjects.agent(agent), codec.encode_envelope(env))


async def _raise(reply: Any) -> None:
    from bus.errors import error_from_info
    from bus.wire import ErrorInfo

    data = await reply
    raise error_from_info(ErrorInfo(**data["payload"]["error"]))


async def test_errors_leave_async_with_runtime_unwrapped(broker: Any) -> None:
    from a2a import Runtime, Settings

    with pytest.raises(NoResponders):
        async with Runtime(Settings(redis_url=None), transport=broker.connect()) as rt:
            await rt.call("nobody", "x")


async def test_a_call_sent_again_is_answered_from_the_reply_cache_not_run_twice(
    make_runtime: MakeRuntime,
) -> None:
    runs = 0
    once = Agent("once")

    @once.action("count")
    async def count(ctx: Context, params: dict[str, Any]) -> int:
        nonlocal runs
        runs += 1
        return runs

    server, client = await make_runtime(), await make_runtime()
    (host,) = await server.serve(once)
    env = RequestEnvelope(
        message_id="m",
        source_agent_id="c",
        target_agent_id="once",
        conversation_id="c",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="count"),
        metadata=Metadata(timestamp=1, correlation_id="dup1", ttl_ms=2000, hop_count=1),
    )
    transport = client.bus.transport
    replies: list[bytes] = []
    reply_subject = client.bus.reply_prefix + "dup1"
    sub = await transport.subscribe(reply_subject, lambda msg: _append(replies, msg.data))
    for _ in range(3):
        await transport.publish(
            server.bus.subjects.agent("once"), codec.encode_envelope(env), reply=reply_subject
        )
        await anyio.sleep(0.05)
    await sub.unsubscribe()
    assert runs == 1 and host.stats.repeated == 2
    assert [json.loads(r)["payload"]["result"] for r in replies] == [1, 1, 1]


async def _append(into: list[bytes], data: bytes) -> None:
    into.append(data)


async def test_unanswered_calls_are_sent_again_after_a_reconnect(
    make_runtime: MakeRuntime, broker: Any
) -> None:
    """A request lost with a dead server is sent again when the connection comes back."""
    client = await make_runtime()
    flaky = broker.connect()
    seen: list[str] = []

    async def responder(msg: Any) -> None:
        env = codec.decode_envelope(msg.data)
        seen.append(env.metadata.correlation_id)
        if len(seen) == 1:
            return  # the first delivery "dies with the server"
        reply = {"type": "response", "messageId": "r", "sourceAgentId": "x", "targetAgentId": "c",
                 "inReplyTo": env.message_id, "conversationId": env.conversation_id,
                 "protocolVersion": PROTOCOL_VERSION,
                 "payload": {"action": "x", "result": "second time"},
                 "metadata": {"timestamp": 1, "correlationId": env.metadata.correlation_id}}  # fmt: skip
        await flaky.publish(msg.reply, json.dumps(reply).encode())

    await flaky.subscribe(client.bus.subjects.agent("lossy"), responder)
    async with anyio.create_task_group() as tg:
        result: list[Any] = []

        async def call() -> None:
            result.append(await client.call("lossy", "x", timeout=3))

        tg.start_soon(call)
        await anyio.sleep(0.1)
        assert await client.bus.resend_unanswered() == 1
    assert result == ["second time"] and len(set(seen)) == 1 and len(seen) == 2


async def test_a_call_in_flight_when_its_runtime_closes_ends_at_once(broker: TestBroker) -> None:
    """No reply can come once the caller's runtime is closed, and nothing watches the call's
    deadline any more: it ends UNAVAILABLE then, not never."""
    slow = Agent("slow")

    @slow.action("wait")
    async def wait(ctx: Context, params: dict[str, Any]) -> Any:
        await anyio.sleep(30)

    ended: list[tuple[str, float]] = []
    async with broker.runtime(slow), anyio.create_task_group() as tg:
        async with broker.runtime() as caller:

            async def call() -> None:
                t = anyio.current_time()
                with pytest.raises(A2AError) as info:
                    await caller.call("slow", "wait", timeout=3)
                ended.append((info.value.code, anyio.current_time() - t))

            tg.start_soon(call)
            await anyio.sleep(0.2)
        with anyio.fail_after(1):
            while not ended:
                await anyio.sleep(0.01)
    assert ended[0][0] == "UNAVAILABLE" and ended[0][1] < 1


async def test_a_call_held_by_an_instance_nobody_serves_after_a_reconnect_ends_agent_lost(
    broker: TestBroker,
) -> None:
    """NO_RESPONDERS says a call never ran (safe to retry). One an instance acknowledged and
    then nobody serves when it is sent again after a reconnect may have run: AGENT_LOST."""
    slow = Agent("slow")

    @slow.action("wait")
    async def wait(ctx: Context, params: dict[str, Any]) -> Any:
        await anyio.sleep(3)  # past the settling after the reconnect; the server's close then waits less

    async with broker.runtime(slow) as server, broker.runtime() as client:
        endpoint = server.hosts["slow"].endpoint
        assert endpoint is not None
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                with pytest.raises(A2AError) as info:
                    await client.call("slow", "wait", timeout=10)
                assert info.value.code == "AGENT_LOST"

            tg.start_soon(call)
            with anyio.fail_after(5):
                while not any(slot.instance for _, slot in client.bus.pending.items()):
                    await anyio.sleep(0.02)  # acknowledged: the instance holds it
            await endpoint.close()  # the instance vanishes, as if its process died
            assert await client.bus.resend_unanswered() == 1  # as after a reconnect


async def test_a_call_whose_params_cannot_be_encoded_is_a_typed_error(broker: TestBroker) -> None:
    """Half a surrogate pair (what the stdlib's json reads from ``"\\ud800"``) cannot be JSON:
    the call says so with a typed error, not a UnicodeEncodeError."""
    async with broker.runtime() as rt:
        with pytest.raises(A2AError) as info:
            await rt.call("anyone", "run", {"text": "x\ud800"}, timeout=2)
    assert info.value.code == "INVALID_PARAMS" and "encoded" in info.value.message
