"""Calls in the compact form of protocol 1.4, and the negotiation: a runtime sends it only
when its settings say every runtime it calls reads it (``peer_protocol``); every runtime
reads both forms and answers each request in the form it came in."""

from __future__ import annotations

import os
from typing import Any

import anyio
import nkeys
import pytest

from a2a import Agent, Context, Settings, to_each
from a2a.core.grants import GrantIssuer
from a2a.errors import A2AError
from bus import codec
from bus.compact import encode_compact
from bus.ids import new_id
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.helpers import raw_reply
from transports import Message

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio

echo = Agent("echo", max_concurrency=64)


@echo.action("run")
async def _run(ctx: Context, params: dict[str, Any]) -> Any:
    return params


@echo.action("seen")
async def _seen(ctx: Context, params: dict[str, Any]) -> Any:
    """What the callee read from the request: every field its checks use."""
    r = ctx.request
    m = r.metadata
    return {
        "version": r.protocol_version,
        "user": ctx.user_id,
        "grant": r.user_grant is not None,
        "source": r.source_agent_id,
        "conversation": r.conversation_id,
        "correlation": m.correlation_id,
        "request": m.request_id,
        "parent": m.parent_id,
        "hops": [m.hop_count, m.max_hops],
        "depth": [m.depth, m.max_depth],
        "chain": m.call_chain,
        "ttl": m.ttl_ms is not None and m.ttl_ms > 0,
        "deadline": m.deadline is not None and m.deadline - m.timestamp == m.ttl_ms,
        "budget": m.budget,
        "priority": m.priority,
        "fan_out": [m.fan_out, m.max_fan_out],
        "batch": m.batch_replies,
    }


hand = Agent("hand")


@hand.action("on")
async def _on(ctx: Context, params: dict[str, Any]) -> Any:
    return {"mine": ctx.request.metadata.key, "theirs": await ctx.call("echo", "seen", {}, budget=500)}


@hand.action("loop")
async def _loop(ctx: Context, params: dict[str, Any]) -> Any:
    return await ctx.call("hand", "on", {})


class Wiretap:
    """Every message the broker carries on the namespace's subjects, as bytes."""

    def __init__(self) -> None:
        self.seen: list[Message] = []

    async def __call__(self, msg: Message) -> None:
        self.seen.append(msg)

    def bodies(self, part: str) -> list[bytes]:
        return [m.data for m in self.seen if f".{part}." in m.subject and m.data]


async def tap(rt: Any) -> Wiretap:
    wiretap = Wiretap()
    await rt.bus.transport.subscribe(f"{rt.bus.subjects.root}.>", wiretap)
    return wiretap


def seed() -> str:
    return nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()


async def test_a_runtime_at_1_4_sends_compact_requests_and_gets_compact_replies(
    make_runtime: MakeRuntime,
) -> None:
    await make_runtime(echo)
    client = await make_runtime(peer_protocol="1.4")
    wiretap = await tap(client)
    assert await client.call("echo", "run", {"text": "x" * 64}) == {"text": "x" * 64}
    (request,) = wiretap.bodies("agent")
    (reply,) = wiretap.bodies("reply")
    assert request.startswith(b'{"t":"q"') and reply.startswith(b'{"t":"r"')
    assert len(request) <= 265 and len(reply) <= 165


async def test_at_1_3_requests_stay_in_the_full_form(make_runtime: MakeRuntime) -> None:
    """1.3: the full form whatever the callee announces (an older runtime may read it)."""
    await make_runtime(echo)
    client = await make_runtime(peer_protocol="1.3")
    await client.wait_for_agents(["echo"])
    wiretap = await tap(client)
    assert await client.call("echo", "run", {"text": "x"}) == {"text": "x"}
    (request,) = wiretap.bodies("agent")
    (reply,) = wiretap.bodies("reply")
    assert request.startswith(b'{"type":"request"') and b'"protocolVersion":"1.3"' in request
    assert reply.startswith(b'{"type":"response"') and b'"protocolVersion":"1.3"' in reply


async def test_by_default_an_agent_the_view_does_not_follow_yet_gets_the_full_form(
    make_runtime: MakeRuntime,
) -> None:
    """In "auto" the first call by name asks the view to follow the agent; once it does, and
    every instance announces 1.4, calls go compact."""
    await make_runtime(echo)
    client = await make_runtime()
    wiretap = await tap(client)
    assert await client.call("echo", "run", {"n": 1}) == {"n": 1}
    assert client.view is not None
    with anyio.fail_after(5):
        while not client.view.reads_compact("echo"):
            await anyio.sleep(0.01)
    assert await client.call("echo", "run", {"n": 2}) == {"n": 2}
    first, second = wiretap.bodies("agent")
    assert first.startswith(b'{"type":"request"') and second.startswith(b'{"t":"q"')


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2", PROTOCOL_VERSION])
async def test_older_full_form_requests_are_still_served_in_the_full_form(
    make_runtime: MakeRuntime, version: str
) -> None:
    server = await make_runtime(echo, peer_protocol="1.4")
    raw = (
        b'{"type":"request","messageId":"m1","sourceAgentId":"old","targetAgentId":"echo",'
        b'"conversationId":"c1","payload":{"action":"run","parameters":{"a":1}},'
        b'"metadata":{"timestamp":1,"correlationId":"k1","hopCount":1,"ttlMs":2000},'
        b'"protocolVersion":"' + version.encode() + b'"}'
    )
    reply = await _exchange(server, raw)
    assert reply.startswith(b'{"type":"response"')
    request = codec.decode_envelope(raw)
    assert type(request) is RequestEnvelope
    got = codec.decode_answer(reply, request)
    assert got.payload.result == {"a": 1} and got.in_reply_to == "m1"
    assert got.metadata.correlation_id == "k1"


async def test_what_the_callee_checks_arrives_the_same_in_both_forms(make_runtime: MakeRuntime) -> None:
    entry = seed()
    trusted = GrantIssuer(entry).public_key
    seen = {}
    for version in ("1.3", "1.4"):
        ns = "v" + version.replace(".", "")
        await make_runtime(echo, hand, grant_keys=trusted, namespace=ns, peer_protocol=version)
        client = await make_runtime(grant_seed=entry, namespace=ns, peer_protocol=version)
        seen[version] = await client.call("hand", "on", {}, user_id="alice", priority="high")
    old, new = seen["1.3"], seen["1.4"]
    assert old["theirs"].pop("version") == "1.3" and new["theirs"].pop("version") == "1.4"
    for got in (old, new):
        theirs = got["theirs"]
        assert theirs["user"] == "alice" and theirs["grant"] is True
        assert theirs["parent"] == got["mine"] and theirs["request"] not in (None, got["mine"])
        assert theirs["hops"][0] == 2 and theirs["depth"][0] == 1 and theirs["chain"] == ["hand"]
        assert theirs["ttl"] and theirs["deadline"] and theirs["budget"] == 500
        assert theirs["priority"] == "high" and theirs["batch"] is True
    unique = ("conversation", "correlation", "request", "parent")
    assert {k: v for k, v in old["theirs"].items() if k not in unique} == {
        k: v for k, v in new["theirs"].items() if k not in unique
    }


async def test_limits_refuse_compact_requests_as_they_refuse_full_ones(make_runtime: MakeRuntime) -> None:
    entry = seed()
    server = await make_runtime(echo, hand, grant_keys=GrantIssuer(entry).public_key, peer_protocol="1.4")
    client = await make_runtime(peer_protocol="1.4", max_depth=1)
    with pytest.raises(A2AError) as info:
        await client.call("hand", "loop", {})  # hand -> hand: a cycle, or too deep
    assert info.value.code in ("CYCLE_DETECTED", "MAX_DEPTH_EXCEEDED")

    def compact(**fields: Any) -> bytes:
        meta = {"timestamp": 1, "correlation_id": new_id(), "ttl_ms": 2000, **fields.pop("meta", {})}
        return encode_compact(
            RequestEnvelope(
                message_id=new_id(),
                source_agent_id=fields.pop("source", "raw"),
                target_agent_id="echo",
                conversation_id=new_id(),
                protocol_version=PROTOCOL_VERSION,
                payload=Payload(action="seen", parameters={}),
                metadata=Metadata(**meta),
                **fields,
            )
        )

    refused = {
        "a user without a grant": (compact(user_id="alice"), "PERMISSION_DENIED"),
        "someone else's grant": (
            compact(user_id="bob", user_grant=GrantIssuer(entry).grant("alice")),
            "PERMISSION_DENIED",
        ),
        "a lineage that does not add up": (compact(meta={"depth": 3}), "INVALID_ENVELOPE"),
        "past its hops": (compact(meta={"hop_count": 11, "max_hops": 10}), "MAX_HOPS_EXCEEDED"),
        "a cycle": (compact(source="echo", meta={"depth": 1, "call_chain": ["echo"]}), "CYCLE_DETECTED"),
        "no time left": (compact(meta={"ttl_ms": 0}), "DEADLINE_EXCEEDED"),
        "bad bytes": (b'{"t":"q","i":"m"}', "INVALID_ENVELOPE"),
    }
    for name, (raw, code) in refused.items():
        reply = await _exchange(server, raw)
        assert b'"' + code.encode() + b'"' in reply, name
    served = await _exchange(server, compact())
    assert served.startswith(b'{"t":"r"')


async def test_compact_replies_travel_in_batches(make_runtime: MakeRuntime) -> None:
    await make_runtime(echo)
    client = await make_runtime(peer_protocol="1.4")
    results: list[Any] = []

    async def one(i: int) -> None:
        results.append(await client.call("echo", "run", {"i": i}))

    async with anyio.create_task_group() as tg:
        for i in range(64):
            tg.start_soon(one, i)
    assert sorted(r["i"] for r in results) == list(range(64))


async def test_a_request_to_several_agents_gets_each_ones_reply(make_runtime: MakeRuntime) -> None:
    other = Agent("other")

    @other.action("run")
    async def _other(ctx: Context, params: dict[str, Any]) -> Any:
        return "other"

    await make_runtime(echo, other)
    client = await make_runtime(peer_protocol="1.4")
    got = await client.call(to_each("echo", "other"), "run", {"x": 1})
    assert got == [{"x": 1}, "other"]


def test_the_setting_takes_the_versions_it_knows() -> None:
    assert Settings.from_env({"A2A_PEER_PROTOCOL": "1.5"}).peer_protocol == "1.5"
    assert Settings.from_env({"A2A_PEER_PROTOCOL": "1.4"}).peer_protocol == "1.4"
    assert Settings.from_env({"A2A_PEER_PROTOCOL": "1.3"}).peer_protocol == "1.3"
    assert Settings.from_env({}).peer_protocol == "auto"
    with pytest.raises(ValueError, match="A2A_PEER_PROTOCOL"):
        Settings.from_env({"A2A_PEER_PROTOCOL": "2.0"})


async def _exchange(rt: Any, raw: bytes) -> bytes:
    """Publish ``raw`` to the echo agent with a plain inbox; the reply's bytes."""
    return await raw_reply(rt.bus.transport, rt.bus.subjects.agent("echo"), raw, timeout=2)
