"""Reply batches: replies to one calling runtime that are ready together travel as one message."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest

from a2a import CallOptions, Runtime, Settings
from a2a.testing import TestBroker
from bus import codec
from bus.protocol import REPLIES_HEADER
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope, ResponseEnvelope
from tests.agents import gated_agent
from transports import MemoryMessage, MemoryTransport

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio

CALLS = 40


class ReplySpy:
    """Every message published on the namespace's reply subjects, as a second subscriber sees it."""

    def __init__(self) -> None:
        self.messages: list[MemoryMessage] = []

    async def __call__(self, msg: Any) -> None:
        self.messages.append(msg)

    def batches(self) -> list[int]:
        return [
            int(m.headers[REPLIES_HEADER]) for m in self.messages if m.headers and REPLIES_HEADER in m.headers
        ]


def gated_reply(in_reply_to: str, result: Any, correlation_id: str) -> bytes:
    """A full-form response of ``gated.echo`` to the client, as a batch line's envelope."""
    reply = ResponseEnvelope(
        message_id="r1",
        source_agent_id="gated",
        target_agent_id="client",
        conversation_id="c",
        in_reply_to=in_reply_to,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="echo", result=result),
        metadata=Metadata(timestamp=1, correlation_id=correlation_id),
    )
    return codec.encode_envelope(reply)


async def call_through_the_gate(
    client: Runtime, server: Runtime, gate: anyio.Event, params: list[dict[str, Any]]
) -> dict[int, Any]:
    """Call ``gated.echo`` once per params, all at once; open the gate when every call is held."""
    results: dict[int, Any] = {}

    async def call(i: int) -> None:
        results[i] = await client.call("gated", "echo", params[i], timeout=5)

    async with anyio.create_task_group() as tg:
        for i in range(len(params)):
            tg.start_soon(call, i)
        with anyio.fail_after(5):
            while server.hosts["gated"].slots.used < len(params):  # all inside the handler
                await anyio.sleep(0.001)
        gate.set()
    return results


async def test_concurrent_replies_travel_in_batches_and_each_call_gets_its_own(
    broker: TestBroker, make_runtime: MakeRuntime
) -> None:
    agent, gate = gated_agent(CALLS)
    server, client = await make_runtime(), await make_runtime()
    await server.serve(agent)
    spy = ReplySpy()
    await broker.connect().subscribe(f"a2a.{client.settings.namespace}.reply.>", spy)
    results = await call_through_the_gate(client, server, gate, [{"i": i} for i in range(CALLS)])
    assert results == {i: {"i": i} for i in range(CALLS)}
    replies = [m for m in spy.messages if m.data]
    assert spy.batches(), "no reply batch was sent"
    assert sum(spy.batches()) + len([m for m in replies if not m.headers]) == CALLS
    assert len(replies) < CALLS / 4  # a few messages carried all the replies
    assert client.bus.stats.invalid_replies == 0


def request(i: int, *, batch: bool) -> bytes:
    env = RequestEnvelope(
        message_id=f"m{i}",
        source_agent_id="raw",
        target_agent_id="gated",
        conversation_id="c",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="echo", parameters={"i": i}),
        metadata=Metadata(timestamp=1, correlation_id=f"c{i}", ttl_ms=5000, batch_replies=batch),
    )
    return codec.encode_envelope(env)


@pytest.mark.parametrize("batch", [False, True])
async def test_only_callers_that_ask_for_batches_get_them(
    broker: TestBroker, make_runtime: MakeRuntime, batch: bool
) -> None:
    agent, gate = gated_agent(CALLS)
    server = await make_runtime()
    await server.serve(agent)
    raw = broker.connect()
    spy = ReplySpy()
    prefix = f"a2a.{server.settings.namespace}.reply.raw.r1."  # a runtime-shaped reply subject
    await raw.subscribe(prefix + "*", spy)
    for i in range(10):
        await raw.publish(
            f"a2a.{server.settings.namespace}.agent.gated.raw", request(i, batch=batch), reply=f"{prefix}c{i}"
        )
    with anyio.fail_after(5):
        while server.hosts["gated"].slots.used < 10:
            await anyio.sleep(0.001)
    gate.set()
    with anyio.fail_after(5):
        while sum(spy.batches()) + len([m for m in spy.messages if not m.headers]) < 10:
            await anyio.sleep(0.001)
    if batch:
        assert spy.batches()
        lines = [line for m in spy.messages if m.headers for line in m.data.split(b"\n")]
        tokens = {line.split(b" ", 1)[0].decode() for line in lines}
        for line in lines:
            token, envelope = line.split(b" ", 1)
            assert json.loads(envelope)["metadata"]["correlationId"] == token.decode()
        assert tokens | {m.subject.rsplit(".", 1)[1] for m in spy.messages if not m.headers} == {
            f"c{i}" for i in range(10)
        }
    else:
        assert not spy.batches()
        assert len(spy.messages) == 10


async def test_a_caller_survives_malformed_batches_and_settles_the_good_lines(
    broker: TestBroker, make_runtime: MakeRuntime
) -> None:
    agent, gate = gated_agent(CALLS)  # opened only at the end: the agent itself does not answer
    server, client = await make_runtime(), await make_runtime()
    await server.serve(agent)
    requests: list[bytes] = []  # the request as the agent received it: a reply must answer it

    async def seen(msg: Any) -> None:
        requests.append(msg.data)

    await broker.connect().subscribe(f"a2a.{client.settings.namespace}.agent.gated.*", seen)

    async def publish_batch() -> None:
        with anyio.fail_after(5):
            while not requests:
                await anyio.sleep(0.001)
        good = gated_reply(json.loads(requests[0])["messageId"], {"from": "batch"}, "known")
        bad_lines = [b"no-space-here", b"\xff\xfe " + good, b" starts-with-space", b""]
        body = b"\n".join([*bad_lines, b"unknown-call " + good, b"known " + good])
        await broker.connect().publish(client.bus.reply_prefix + "known", body, headers={REPLIES_HEADER: "6"})

    async with anyio.create_task_group() as tg:
        tg.start_soon(publish_batch)
        response = await client.request("gated", "echo", {}, CallOptions(request_id="known", timeout=5))
    assert response.payload.result == {"from": "batch"}
    assert client.bus.stats.invalid_replies == 4  # the malformed lines
    assert client.bus.pending.late_replies >= 1  # the line for a call nobody waits for
    gate.set()


async def test_a_line_that_does_not_answer_its_call_is_dropped_and_the_call_waits_for_its_reply(
    broker: TestBroker, make_runtime: MakeRuntime
) -> None:
    """A line names its call by request id, which every hop downstream knows: one that does not
    answer the very request (its message id) must not end the call, with an error or at all."""
    agent, gate = gated_agent(CALLS)
    server, client = await make_runtime(), await make_runtime()
    await server.serve(agent)

    async def forge_then_open_the_gate() -> None:
        with anyio.fail_after(5):
            while server.hosts["gated"].slots.used < 1:  # the call is held, its reply still to come
                await anyio.sleep(0.001)
        forged = gated_reply("not-the-request", "forged", "victim")
        lines = [b"victim " + forged, b'victim {"t":"r","re":null}', b"victim {"]
        await broker.connect().publish(
            client.bus.reply_prefix + "victim", b"\n".join(lines), headers={REPLIES_HEADER: "3"}
        )
        await anyio.sleep(0.1)
        assert client.bus.pending.get("victim") is not None  # still waiting
        gate.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(forge_then_open_the_gate)
        response = await client.request(
            "gated", "echo", {"n": 1}, CallOptions(request_id="victim", timeout=5)
        )
    assert response.payload.result == {"n": 1}
    assert client.bus.stats.invalid_replies == 3


async def test_batches_stay_under_the_message_limit(broker: TestBroker, make_runtime: MakeRuntime) -> None:
    agent, gate = gated_agent(20)
    server, client = await make_runtime(), await make_runtime()
    await server.serve(agent)
    spy = ReplySpy()
    await broker.connect().subscribe(f"a2a.{client.settings.namespace}.reply.>", spy)
    text = "x" * 10_000  # 20 replies of 10 KB: more than one 64 KiB message holds
    results = await call_through_the_gate(client, server, gate, [{"i": i, "text": text} for i in range(20)])
    assert results == {i: {"i": i, "text": text} for i in range(20)}
    assert len(spy.batches()) >= 2
    assert max(len(m.data) for m in spy.messages) <= broker.max_payload
    assert server.bus.link.replies_lost == 0


async def test_callers_without_a_runtime_reply_subject_never_share_a_batch(
    broker: TestBroker, make_runtime: MakeRuntime
) -> None:
    # Three clients whose reply subjects sit under the reply root but are not shaped
    # <identity>.<runtimeId>.<correlationId>: each gets its own reply, even asking for batches.
    agent, gate = gated_agent(10)
    server = await make_runtime()
    await server.serve(agent)
    ns = server.settings.namespace
    spies = {who: ReplySpy() for who in ("alice", "bob", "carol")}
    for who, spy in spies.items():
        await broker.connect().subscribe(f"a2a.{ns}.reply.{who}", spy)
    raw = broker.connect()
    for i, who in enumerate(spies):
        await raw.publish(f"a2a.{ns}.agent.gated.raw", request(i, batch=True), reply=f"a2a.{ns}.reply.{who}")
    with anyio.fail_after(5):
        while server.hosts["gated"].slots.used < 3:
            await anyio.sleep(0.001)
    gate.set()
    with anyio.fail_after(5):
        while not all(spy.messages for spy in spies.values()):
            await anyio.sleep(0.001)
    await anyio.sleep(0.05)
    for i, spy in enumerate(spies.values()):
        (msg,) = spy.messages
        assert not msg.headers
        assert json.loads(msg.data)["payload"]["result"] == {"i": i}


class TaskBoundTransport(MemoryTransport):
    """A transport whose publish works only inside a task (as one using asyncio.timeout would)."""

    async def publish(self, subject: str, data: bytes, **kwargs: Any) -> None:
        async with asyncio.timeout(5):
            await super().publish(subject, data, **kwargs)


async def test_batches_are_published_from_a_task_of_their_own(broker: TestBroker) -> None:
    agent, gate = gated_agent(CALLS)
    async with (
        Runtime(Settings(audit=False), transport=TaskBoundTransport(broker)) as server,
        Runtime(Settings(audit=False), transport=TaskBoundTransport(broker)) as client,
    ):
        await server.serve(agent)
        results = await call_through_the_gate(client, server, gate, [{"i": i} for i in range(CALLS)])
        assert results == {i: {"i": i} for i in range(CALLS)}
        assert server.bus.link.replies_lost == 0
