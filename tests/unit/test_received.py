"""What an endpoint remembers of the calls it received: a call still waiting or running is
never forgotten for the many that arrived after it, so sent again after a reconnect it is
never run twice."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Agent, Context
from a2a.testing import TestBroker
from bus._received import Received
from bus.protocol import REPLY_CACHE_SIZE

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio


def test_calls_in_progress_outlive_any_number_of_answered_ones() -> None:
    received = Received()
    assert received.arrived("running")
    for n in range(3 * REPLY_CACHE_SIZE):
        assert received.arrived(f"r{n}")
        received.answered(f"r{n}", b"done")
    assert not received.arrived("running")  # a repeat: still known, still in progress
    assert received.reply("running") is None
    assert len(received._replies) <= REPLY_CACHE_SIZE + REPLY_CACHE_SIZE // 8 + 1


def test_past_twice_the_size_of_calls_in_progress_the_oldest_go() -> None:
    received = Received()
    for n in range(3 * REPLY_CACHE_SIZE):  # none answered: withdrawn and gone unnoticed, say
        received.arrived(f"r{n}")
    assert len(received._replies) <= 2 * REPLY_CACHE_SIZE + REPLY_CACHE_SIZE // 8 + 1
    assert received.arrived("r0")  # forgotten at last: bounded memory


async def test_a_call_sent_again_after_a_flood_is_not_run_twice(
    broker: TestBroker, make_runtime: MakeRuntime
) -> None:
    runs: list[str] = []
    slow = Agent("slow", max_concurrency=4)

    @slow.action("pay")
    async def pay(ctx: Context, params: dict[str, Any]) -> str:
        runs.append(ctx.request.metadata.key)
        await anyio.sleep(1.0)
        return "paid"

    server, client = await make_runtime(), await make_runtime()
    await server.serve(slow)
    flooder = broker.connect()
    ns = client.settings.namespace
    async with anyio.create_task_group() as tg:
        result: list[Any] = []

        async def call() -> None:
            result.append(await client.call("slow", "pay", {}, timeout=10))

        tg.start_soon(call)
        with anyio.fail_after(5):
            while not runs:
                await anyio.sleep(0.01)
        for n in range(REPLY_CACHE_SIZE + REPLY_CACHE_SIZE // 4):  # each refused and answered
            await flooder.publish(f"a2a.{ns}.agent.slow.flood", b"x", reply=f"a2a.{ns}.reply.flood.r.{n}")
        await anyio.sleep(0.2)
        assert await client.bus.resend_unanswered() == 1  # as after a reconnect
    assert result == ["paid"] and len(runs) == 1
