"""Calls an endpoint holds: stopping one never reaches another handled later by the same worker."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest

from a2a import A2AError, Agent, Context
from a2a.testing import TestBroker
from bus.callee import Held
from bus.wire import PROTOCOL_VERSION

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio

LONG = 10


async def test_a_deadline_seen_for_a_finished_call_does_not_stop_the_next_one(
    make_runtime: MakeRuntime,
) -> None:
    # The sweep takes a snapshot of held calls and publishes acks for the long ones (each
    # publish lets the loop run). Meanwhile call X, which it saw past its deadline, ends,
    # and its worker takes call Z. The sweep must not stop Z for X's deadline.
    agent = Agent("w", max_concurrency=50)
    gates: dict[str, asyncio.Event] = {}
    stopped: list[str] = []

    @agent.action("wait")
    async def wait(ctx: Context, params: dict[str, Any]) -> Any:
        key = params["k"]
        try:
            if key == "z":
                await asyncio.sleep(0.2)
            else:
                await gates.setdefault(key, asyncio.Event()).wait()
        except asyncio.CancelledError:
            stopped.append(key)
            raise
        return key

    server, client = await make_runtime(), await make_runtime()
    await server.serve(agent)
    host = server.hosts["w"]
    assert host.endpoint is not None
    held_calls = host.endpoint.held
    results: dict[str, Any] = {}

    async def call(key: str, timeout: float) -> None:
        try:
            results[key] = await client.call("w", "wait", {"k": key}, timeout=timeout)
        except A2AError as exc:
            results[key] = exc.code

    async def z_after_x() -> None:
        while "x" not in results:
            await asyncio.sleep(0)
        await call("z", 2)

    async with anyio.create_task_group() as tg:
        for i in range(LONG):
            tg.start_soon(call, f"long{i}", 60)
        with anyio.fail_after(5):
            while len(held_calls) < LONG:
                await anyio.sleep(0.001)
        tg.start_soon(call, "x", 30)
        with anyio.fail_after(5):
            while len(held_calls) < LONG + 1:
                await anyio.sleep(0.001)
        *long_calls, x = list(held_calls.values())
        for held in long_calls:
            held.acked = False  # as when they reach ACK_AFTER: the sweep publishes an ack each
        tg.start_soon(z_after_x)
        await asyncio.sleep(0)
        gates.setdefault("x", asyncio.Event()).set()  # X ends while the sweep is under way
        await host.endpoint.sweep(x.deadline)
        with anyio.fail_after(5):
            while "z" not in results:
                await anyio.sleep(0.01)
        for i in range(LONG):
            gates.setdefault(f"long{i}", asyncio.Event()).set()
    assert results["x"] == "x"
    assert results["z"] == "z"
    assert stopped == []
    assert host.stats.handled == LONG + 2


async def test_a_call_withdrawn_before_it_is_held_is_stopped_as_soon_as_it_is(
    make_runtime: MakeRuntime,
) -> None:
    # The cancel notice travels on another subscription and may overtake the request,
    # which waits in the instance's queue: the withdrawal must not be lost.
    agent = Agent("w")
    started: list[str] = []

    @agent.action("wait")
    async def wait(ctx: Context, params: dict[str, Any]) -> Any:
        started.append(params["k"])
        await asyncio.sleep(LONG)

    server = await make_runtime()
    await server.serve(agent)
    endpoint = server.hosts["w"].endpoint
    assert endpoint is not None
    loop = asyncio.get_running_loop()

    def held(sender: str) -> Held:
        return Held(loop.create_task(asyncio.sleep(LONG)), "", 0.0, LONG, sender)

    endpoint.withdraw(["early"], "client-a")
    someone_else = held("client-b")
    endpoint.hold("early", someone_else)  # only the call's own sender may withdraw it
    assert someone_else.reason is None
    endpoint.release("early", someone_else)
    endpoint.withdraw(["early"], "client-a")
    mine = held("client-a")
    endpoint.hold("early", mine)
    assert mine.reason == "withdrawn"
    await asyncio.sleep(0)
    assert mine.task.cancelled()
    someone_else.task.cancel()
    for i in range(2000):  # a flood of withdrawals of unknown calls is bounded: the oldest go
        endpoint.withdraw([f"junk-{i}"], "client-a")
    oldest, newest = held("client-a"), held("client-a")
    endpoint.hold("junk-0", oldest)
    endpoint.hold("junk-1999", newest)
    assert oldest.reason is None and newest.reason == "withdrawn"
    for h in (oldest, newest):
        h.task.cancel()
    assert started == []


async def test_a_request_naming_another_callers_held_call_is_refused_and_that_call_still_ends(
    broker: TestBroker, make_runtime: MakeRuntime
) -> None:
    """Request ids are known downstream: a request reusing the id of a call another sender
    has held must not take its place (it would escape its deadline and its withdrawal)."""
    agent = Agent("w", max_concurrency=4)
    stopped: list[str] = []

    @agent.action("wait")
    async def wait(ctx: Context, params: dict[str, Any]) -> Any:
        try:
            await asyncio.sleep(LONG)
        except asyncio.CancelledError:
            stopped.append(params["k"])
            raise

    server, client = await make_runtime(), await make_runtime()
    await server.serve(agent)
    endpoint = server.hosts["w"].endpoint
    assert endpoint is not None
    intruder = broker.connect()
    answers: list[bytes] = []

    async def heard(msg: Any) -> None:
        answers.append(msg.data)

    await intruder.subscribe("_INBOX.intruder", heard)
    async with anyio.create_task_group() as tg:

        async def victim() -> None:
            with pytest.raises(A2AError) as info:
                await client.call("w", "wait", {"k": "victim"}, timeout=1.0)
            assert info.value.code == "DEADLINE_EXCEEDED"

        tg.start_soon(victim)
        with anyio.fail_after(5):
            while not endpoint.held:
                await anyio.sleep(0.001)
        (key,) = endpoint.held
        forged = {
            "type": "request", "messageId": "f" * 32, "sourceAgentId": "intruder", "targetAgentId": "w",
            "conversationId": "x", "protocolVersion": PROTOCOL_VERSION,
            "payload": {"action": "wait", "parameters": {"k": "forged"}},
            "metadata": {"timestamp": 1, "correlationId": key, "requestId": key, "ttlMs": 60000},
        }  # fmt: skip
        subject = f"a2a.{client.settings.namespace}.agent.w.intruder"
        await intruder.publish(subject, json.dumps(forged).encode(), reply="_INBOX.intruder")
        with anyio.fail_after(5):
            while not answers:
                await anyio.sleep(0.01)
    assert json.loads(answers[0])["payload"]["error"]["code"] == "INVALID_ENVELOPE"
    with anyio.fail_after(2):  # the callee stops it a moment after its caller gave up
        while not stopped:
            await anyio.sleep(0.001)
    assert stopped == ["victim"]  # at its deadline, as if nobody had tried
