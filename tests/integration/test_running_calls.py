"""A call that runs longer than half a second is announced while it runs (one ``running``
record on ``a2a.<ns>.running.<agent>``, not kept); a quick one is not. Real nats-server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.core.running import RUNNING_AFTER
from a2a.stores.audit import AuditRecord, decode_records

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def timed() -> Agent:
    agent = Agent("timed", max_concurrency=4)

    @agent.action("sleep")
    async def sleep(ctx: Context, p: dict[str, Any]) -> str:
        await anyio.sleep(p["seconds"])
        return "slept"

    return agent


async def test_a_long_call_is_announced_once_while_it_runs(settings: Settings) -> None:
    running: list[AuditRecord] = []
    ended: list[AuditRecord] = []

    async def on_running(msg: Any) -> None:
        running.extend(decode_records(msg.data))

    async def on_audit(msg: Any) -> None:
        ended.extend(decode_records(msg.data))

    async with Runtime(settings) as rt:
        await rt.serve(timed())
        await rt.bus.link.subscribe(rt.bus.subjects.running_all, on_running)
        await rt.subscribe_audit(on_audit)
        for _ in range(5):
            await rt.call("timed", "sleep", {"seconds": 0.01})
        seen_while_running: list[AuditRecord] = []

        async def long_call() -> None:
            await rt.call("timed", "sleep", {"seconds": 3 * RUNNING_AFTER}, user_id="ann")
            seen_while_running.extend(running)

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_call)
        with anyio.fail_after(5):
            while len([r for r in ended if r.action == "sleep"]) < 6:
                await anyio.sleep(0.02)
        await anyio.sleep(2 * RUNNING_AFTER)  # no second record for it, nor one for the quick calls

    [announced] = seen_while_running  # before the call returned
    assert running == [announced]
    assert announced.outcome == "running" and announced.target == "timed" and announced.user_id == "ann"
    assert RUNNING_AFTER <= announced.duration_ms / 1000 < 3 * RUNNING_AFTER
    [final] = [r for r in ended if r.request_id == announced.request_id]
    assert final.outcome == "ok" and final.duration_ms > announced.duration_ms
    assert all(r.outcome != "running" for r in ended)  # the kept records are the ends only
