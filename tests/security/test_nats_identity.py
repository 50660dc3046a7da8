"""Identities proven by nats-server: nobody sends, answers, cancels or audits as someone else.

Each test runs the honest path (planner -> writer -> reader under the generated
permissions) next to an attack by a raw NATS client logged in as another user.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime
from a2a.errors import PermissionDenied
from bus import codec
from bus._replies import parse_reply
from bus.protocol import CANCEL_HEADER, encode_cancel
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope, ResponseEnvelope
from tests.security.conftest import NAMESPACE, as_user

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

release = anyio.Event()
cancelled: list[str] = []


def agents() -> tuple[Agent, Agent, Agent]:
    reader, writer, planner = Agent("reader"), Agent("writer"), Agent("planner")

    @reader.action("read")
    async def read(ctx: Context, params: dict[str, Any]) -> Any:
        return {"text": "from reader", "source": ctx.request.source_agent_id}

    @writer.action("write")
    async def write(ctx: Context, params: dict[str, Any]) -> Any:
        if params.get("hold"):
            try:
                with anyio.fail_after(10):
                    await release.wait()
            except anyio.get_cancelled_exc_class():
                cancelled.append(ctx.request.metadata.correlation_id)
                raise
        read = await ctx.call("reader", "read", {})
        return {"written": True, "read": read}

    @planner.action("plan")
    async def plan(ctx: Context, params: dict[str, Any]) -> Any:
        return await ctx.call("writer", "write", params)

    return reader, writer, planner


@pytest.fixture
async def deployment(secured_nats: str) -> AsyncIterator[dict[str, Runtime]]:
    """planner, writer and reader, each in a runtime logged in as its own NATS user."""
    global release
    release = anyio.Event()
    cancelled.clear()
    reader, writer, planner = agents()
    async with (
        Runtime(as_user(secured_nats, "reader")) as r,
        Runtime(as_user(secured_nats, "writer")) as w,
        Runtime(as_user(secured_nats, "planner")) as p,
        Runtime(as_user(secured_nats, "client")) as c,
    ):
        await r.serve(reader)
        await w.serve(writer)
        await p.serve(planner)
        yield {"reader": r, "writer": w, "planner": p, "client": c}


def request(source: str, target: str, action: str, **meta: Any) -> bytes:
    env = RequestEnvelope(
        message_id="m1",
        source_agent_id=source,
        target_agent_id=target,
        conversation_id="c1",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action=action, parameters={}),
        metadata=Metadata(timestamp=1, correlation_id="forged-1", ttl_ms=3000, **meta),
    )
    return codec.encode_envelope(env)


@asynccontextmanager
async def planner_call_in_flight(
    deployment: dict[str, Runtime],
) -> AsyncIterator[tuple[str, list[Any]]]:
    """The client's call to the planner, held at the writer until ``release`` is set.

    Yields the correlation id of the planner's pending call to the writer, and the list the
    client's result lands in once the call ends (after the block).
    """
    planner = deployment["planner"]
    results: list[Any] = []

    async def call() -> None:
        results.append(await deployment["client"].call("planner", "plan", {"hold": True}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await wait_for(lambda: len(planner.bus.pending) == 1)
        (correlation_id,) = list(planner.bus.pending._slots)
        yield correlation_id, results


async def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.01)


async def test_the_honest_chain_works_under_the_generated_permissions(deployment: dict[str, Runtime]) -> None:
    out = await deployment["client"].call("planner", "plan", {})
    assert out == {"written": True, "read": {"text": "from reader", "source": "writer"}}


async def test_no_user_can_publish_as_another(deployment: dict[str, Runtime], attacker: Any) -> None:
    reader = await attacker("reader")
    # As the planner (the sender token is not its own), and in its own name to an agent it may not call.
    await reader.publish(f"a2a.{NAMESPACE}.agent.writer.planner", request("planner", "writer", "write"))
    await reader.publish(f"a2a.{NAMESPACE}.agent.writer.reader", request("reader", "writer", "write"))
    await reader.publish(f"a2a.{NAMESPACE}.notify.planner.news", b"{}")
    await wait_for(lambda: len(reader.refused) >= 3)
    assert all("permissions violation" in e.lower() for e in reader.refused)
    assert deployment["writer"].hosts["writer"].stats.handled == 0


async def test_a_source_agent_id_that_is_not_the_sender_is_refused(
    deployment: dict[str, Runtime], attacker: Any
) -> None:
    # The client may call the reader, but not claim to be the writer while doing so.
    client = await attacker("client")
    inbox = f"a2a.{NAMESPACE}.reply.client.x1.forged-1"
    replies: list[bytes] = []

    async def got(msg: Any) -> None:
        replies.append(msg.data)

    await client.nc.subscribe(inbox, cb=got)
    forged = request("writer", "reader", "read", depth=1, call_chain=["writer"])
    await client.publish(f"a2a.{NAMESPACE}.agent.reader.client", forged, reply=inbox)
    await wait_for(lambda: bool(replies))
    reply = codec.decode_envelope(replies[0])
    assert reply.payload.error is not None and reply.payload.error.code == "PERMISSION_DENIED"
    assert "not the identity that sent" in reply.payload.error.message
    # Depth forged to 0 with a roster agent's name changes nothing either.
    replies.clear()
    await client.publish(
        f"a2a.{NAMESPACE}.agent.reader.client", request("writer", "reader", "read"), reply=inbox
    )
    await wait_for(lambda: bool(replies))
    assert codec.decode_envelope(replies[0]).payload.error.code == "PERMISSION_DENIED"  # type: ignore[union-attr]
    assert deployment["reader"].hosts["reader"].stats.handled == 0


async def test_only_the_instance_that_received_a_call_can_answer_it(
    deployment: dict[str, Runtime], attacker: Any
) -> None:
    planner = deployment["planner"]
    async with planner_call_in_flight(deployment) as (correlation_id, results):
        reply_subject = planner.bus.reply_prefix + correlation_id  # leaked to the attacker
        forged = ResponseEnvelope(
            message_id="f",
            source_agent_id="writer",
            target_agent_id="planner",
            conversation_id="c",
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(action="write", result={"written": "FORGED"}),
            metadata=Metadata(timestamp=1, correlation_id=correlation_id),
        )
        reader = await attacker("reader")
        await reader.publish(reply_subject, codec.encode_envelope(forged))
        await wait_for(lambda: bool(reader.refused))
        release.set()
    assert results[0]["written"] is True


async def test_only_the_caller_can_cancel_its_call(deployment: dict[str, Runtime], attacker: Any) -> None:
    writer = deployment["writer"].hosts["writer"]
    async with anyio.create_task_group() as tg:
        results: list[Any] = []

        async def call() -> None:
            results.append(await deployment["planner"].call("writer", "write", {"hold": True}))

        tg.start_soon(call)
        await wait_for(lambda: bool(writer.endpoint and writer.endpoint.held))
        assert writer.endpoint is not None
        (correlation_id,) = list(writer.endpoint.held)
        client = await attacker("client")
        # In its own name: delivered, and ignored (the call is the planner's).
        await client.publish(f"a2a.{NAMESPACE}.cancel.writer.client", encode_cancel(correlation_id))
        await client.publish(
            f"a2a.{NAMESPACE}.inst.writer.{writer.instance_id}.client",
            encode_cancel(correlation_id),
            headers={CANCEL_HEADER: "1"},
        )
        await wait_for(lambda: writer.endpoint is not None and writer.endpoint.cancel_rejects.total >= 2)
        # In the planner's name: refused by the server.
        await client.publish(f"a2a.{NAMESPACE}.cancel.writer.planner", encode_cancel(correlation_id))
        await wait_for(lambda: bool(client.refused))
        assert not cancelled
        release.set()
    assert results[0]["written"] is True


async def test_the_caller_cancels_its_call_when_it_gives_up(deployment: dict[str, Runtime]) -> None:
    with pytest.raises(Exception, match=r"DEADLINE_EXCEEDED|within"):
        await deployment["planner"].call("writer", "write", {"hold": True}, timeout=0.5)
    await wait_for(lambda: len(cancelled) == 1)


async def test_audit_records_and_the_audit_stream_are_out_of_agents_reach(
    deployment: dict[str, Runtime], attacker: Any
) -> None:
    reader = await attacker("reader")
    await reader.publish(f"a2a.{NAMESPACE}.audit.reader", b"{}")  # its own subject: allowed
    await anyio.sleep(0.2)
    assert not reader.refused
    await reader.publish(f"a2a.{NAMESPACE}.audit.writer", b"{}")
    await reader.publish(f"$JS.API.STREAM.UPDATE.A2A_AUDIT_{NAMESPACE}", b"{}")
    await reader.publish(f"$JS.API.STREAM.DELETE.A2A_AUDIT_{NAMESPACE}", b"{}")
    await reader.publish(f"$JS.API.STREAM.PURGE.A2A_AUDIT_{NAMESPACE}", b"{}")
    await wait_for(lambda: len(reader.refused) >= 4)


async def test_the_server_refuses_an_agent_calling_outside_its_rights(deployment: dict[str, Runtime]) -> None:
    # The reader's own runtime policy is bypassed (no roster): the server still refuses at once.
    from a2a import Policy

    async with Runtime(as_user(deployment["reader"].settings.nats_url, "reader"), policy=Policy()) as rogue:
        with anyio.fail_after(3), pytest.raises(PermissionDenied):
            await rogue.call("planner", "plan", {})


async def test_an_agent_cannot_hand_itself_a_reply_subject(
    deployment: dict[str, Runtime], attacker: Any
) -> None:
    """Whoever receives a message may answer on its reply subject: nothing an agent sends reaches it."""
    reader = await attacker("reader")
    got: list[Any] = []

    async def keep(msg: Any) -> None:
        got.append(msg)

    await reader.nc.subscribe(f"a2a.{NAMESPACE}.notify.*.loop", queue="reader", cb=keep)
    await reader.publish(
        f"a2a.{NAMESPACE}.notify.reader.loop", b"x", reply=f"a2a.{NAMESPACE}.agent.writer.planner"
    )
    await anyio.sleep(0.3)
    assert not got  # so no right to publish as the planner either
    await reader.publish(f"a2a.{NAMESPACE}.agent.writer.planner", request("planner", "writer", "write"))
    await wait_for(lambda: bool(reader.refused))
    # Notifications from others still arrive, in the agent's own queue group only.
    planner = await attacker("planner")
    await planner.publish(f"a2a.{NAMESPACE}.notify.planner.loop", b"y")
    await wait_for(lambda: len(got) == 1)
    before = len(reader.refused)
    await reader.nc.subscribe(f"a2a.{NAMESPACE}.notify.*.news", queue="writer")
    await reader.nc.flush()
    await wait_for(lambda: len(reader.refused) > before)


async def test_an_agent_does_not_answer_on_someone_elses_reply_subject(
    deployment: dict[str, Runtime], attacker: Any
) -> None:
    """A request whose reply subject belongs to another runtime is not answered: bouncing a
    reply off an honest agent into another caller's pending call does not work."""
    planner = deployment["planner"]
    async with planner_call_in_flight(deployment) as (correlation_id, results):
        client = await attacker("client")
        forged = request("client", "reader", "read")
        await client.publish(
            f"a2a.{NAMESPACE}.agent.reader.client", forged, reply=planner.bus.reply_prefix + correlation_id
        )
        reader = deployment["reader"].hosts["reader"]
        await wait_for(lambda: reader.endpoint is not None and reader.endpoint.reply_rejects.total == 1)
        release.set()
    assert results[0]["written"] is True


async def test_a_reply_must_answer_the_very_request(deployment: dict[str, Runtime]) -> None:
    """Even on the right subject, a reply naming another request is refused by the caller."""
    from bus.errors import InvalidEnvelope
    from bus.wire import RequestEnvelope as Request

    planner = deployment["planner"]
    env = Request(
        message_id="mine",
        source_agent_id="planner",
        target_agent_id="writer",
        conversation_id="c",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="write", parameters={}),
        metadata=Metadata(timestamp=1, correlation_id="x"),
    )
    other = ResponseEnvelope(
        message_id="r",
        source_agent_id="writer",
        target_agent_id="planner",
        conversation_id="c",
        in_reply_to="somebody-else",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="write", result="FORGED"),
        metadata=Metadata(timestamp=1, correlation_id="x"),
    )
    with pytest.raises(InvalidEnvelope, match="not this request"):
        parse_reply(codec.encode_envelope(other), env, planner.bus.caller.stats)


async def test_audit_records_are_read_by_clients_and_auditors_only_and_forgeries_are_skipped(
    deployment: dict[str, Runtime], attacker: Any, secured_nats: str
) -> None:
    from a2a.core.connect import connect_nats
    from a2a.stores.audit import read_audit

    await deployment["client"].call("planner", "plan", {})
    reader = await attacker("reader")
    sniffed: list[Any] = []

    async def sniff(msg: Any) -> None:
        sniffed.append(msg)

    await reader.nc.subscribe("_INBOX.>", cb=sniff)  # other users' inboxes
    await reader.nc.subscribe("_INBOX_client.>", cb=sniff)
    await reader.nc.flush()
    await wait_for(lambda: len(reader.refused) >= 2)
    # The reader may publish on its own audit subject only, and writes a record about others.
    fake = (
        b'{"requestId":"r","conversationId":"c","origin":"planner","target":"writer","action":"wire_money",'
    )
    fake += b'"outcome":"ok","side":"callee","startedAt":1,"durationMs":1.0}'
    await reader.publish(f"a2a.{NAMESPACE}.audit.reader", fake)
    await anyio.sleep(0.5)
    for user in ("client", "auditor"):
        transport = await connect_nats(as_user(secured_nats, user))
        try:
            records = await read_audit(transport, NAMESPACE)
        finally:
            await transport.aclose()
        hops = {(r.origin, r.target) for r in records}
        assert {("client", "planner"), ("planner", "writer"), ("writer", "reader")} <= hops
        assert not any(r.action == "wire_money" for r in records)
    assert not sniffed
