"""The compact form of protocol 1.4 through a real nats-server: one callee serves callers of
both forms, by name and by capability, one call at a time and in reply batches."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from a2a import Agent, AgentCapability, Context, Runtime, Settings, by_capability
from a2a.stores.audit import AuditFilter, read_audit
from transports import NatsTransport

pytestmark = pytest.mark.anyio

echo = Agent("echo", capabilities=[AgentCapability(id="test.echo")], max_concurrency=64)


@echo.action("run")
async def _run(ctx: Context, params: dict[str, Any]) -> Any:
    return {**params, "version": ctx.request.protocol_version}


async def test_one_callee_serves_both_forms_over_nats(settings: Settings) -> None:
    seen: list[tuple[str, bytes]] = []

    async def spy(msg: Any) -> None:
        seen.append((msg.subject, msg.data))

    observer = await NatsTransport.connect(settings.nats_url)
    compact = msgspec.structs.replace(settings, peer_protocol="1.4")
    full = msgspec.structs.replace(settings, peer_protocol="1.3")
    try:
        await observer.subscribe(f"a2a.{settings.namespace}.>", spy)
        await observer.flush()
        async with Runtime(settings) as server, Runtime(full) as old, Runtime(compact) as new:
            await server.serve(echo)
            await new.wait_for_agents(["echo"], timeout=10)
            assert await old.call("echo", "run", {"n": 0}) == {"n": 0, "version": "1.3"}
            assert await new.call("echo", "run", {"n": 1}) == {"n": 1, "version": "1.4"}
            routed = await new.call(by_capability("test.echo"), "run", {"n": 2})
            assert routed == {"n": 2, "version": "1.4"}
            results: list[Any] = []

            async def one(i: int) -> None:
                results.append(await new.call("echo", "run", {"i": i}))

            async with anyio.create_task_group() as tg:
                for i in range(64):
                    tg.start_soon(one, i)
            assert sorted(r["i"] for r in results) == list(range(64))
            await observer.flush()
    finally:
        await observer.aclose()
    requests = [data for subject, data in seen if ".agent.echo." in subject or ".inst.echo." in subject]
    assert sum(data.startswith(b'{"type":"request"') for data in requests) == 1
    assert sum(data.startswith(b'{"t":"q"') for data in requests) == 66
    replies = [data for subject, data in seen if ".reply." in subject and data]
    assert sum(data.startswith(b'{"type":"response"') for data in replies) == 1
    # A batch's lines each hold a compact reply.
    lines = [
        line.partition(b" ")[2] if b"\n" in data else line for data in replies for line in data.split(b"\n")
    ]
    assert sum(line.startswith(b'{"t":"r"') for line in lines) == 66


async def test_compact_audit_records_are_kept_and_read_back_beside_full_ones(settings: Settings) -> None:
    older = Agent("older")

    @older.action("run")
    async def _older(ctx: Context, params: dict[str, Any]) -> Any:
        return params

    compact = msgspec.structs.replace(settings, peer_protocol="1.4")
    full = msgspec.structs.replace(settings, peer_protocol="1.3")
    async with Runtime(compact) as new, Runtime(full) as old:
        await new.serve(echo)  # writes compact records
        await old.serve(older)  # writes full ones
        await new.wait_for_agents(["echo", "older"], timeout=10)
        await new.call("echo", "run", {}, conversation_id="both-forms")
        await new.call("older", "run", {}, conversation_id="both-forms")
        transport = new.bus.transport
        assert isinstance(transport, NatsTransport)
        records: list[Any] = []
        with anyio.fail_after(5):  # records travel in batches
            while len(records) < 2:
                await anyio.sleep(0.1)
                match = AuditFilter(conversation_id="both-forms")
                records = await read_audit(transport, settings.namespace, match)
    assert sorted((r.origin, r.target, r.outcome, r.side) for r in records) == [
        ("client", "echo", "ok", "callee"),
        ("client", "older", "ok", "callee"),
    ]
