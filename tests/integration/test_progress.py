"""Progress updates: a handler tells its caller how the work goes before the result."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime, Settings

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def worker() -> Agent:
    agent = Agent("worker")

    @agent.action("steps")
    async def steps(ctx: Context, params: dict[str, Any]) -> str:
        for i in range(params["n"]):
            await ctx.progress({"step": i})
        return "done"

    @agent.action("bad_updates")
    async def bad_updates(ctx: Context, params: dict[str, Any]) -> str:
        await ctx.progress({"not json": object()})
        await ctx.progress("x" * 20_000)
        await ctx.progress({"after": True})
        return "done"

    return agent


def relay() -> Agent:
    agent = Agent("relay")

    @agent.action("relay")
    async def forward(ctx: Context, params: dict[str, Any]) -> str:
        seen: list[Any] = []
        result = await ctx.call("worker", "steps", {"n": 2}, on_progress=seen.append)
        await ctx.progress({"child": seen})
        return str(result)

    return agent


async def test_updates_reach_a_caller_in_another_runtime_in_order_before_the_result(
    settings: Settings,
) -> None:
    async with Runtime(settings) as host, Runtime(settings) as caller:
        await host.serve(worker())
        await caller.wait_for_agents(["worker"])
        seen: list[Any] = []
        assert await caller.call("worker", "steps", {"n": 20}, on_progress=seen.append) == "done"
        assert seen == [{"step": i} for i in range(20)]


async def test_a_caller_in_the_same_process_gets_them_too(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        await rt.serve(worker())
        seen: list[Any] = []
        assert await rt.call("worker", "steps", {"n": 3}, on_progress=seen.append) == "done"
        assert seen == [{"step": 0}, {"step": 1}, {"step": 2}]


async def test_unencodable_and_oversized_updates_are_dropped_not_fatal(settings: Settings) -> None:
    async with Runtime(settings) as host, Runtime(settings) as caller:
        await host.serve(worker())
        await caller.wait_for_agents(["worker"])
        seen: list[Any] = []
        assert await caller.call("worker", "bad_updates", on_progress=seen.append) == "done"
        assert seen == [{"after": True}]


async def test_a_handler_sees_its_own_callee_progress_and_calls_without_a_callback_ignore_it(
    settings: Settings,
) -> None:
    async with Runtime(settings) as host, Runtime(settings) as caller:
        await host.serve(worker(), relay())
        await caller.wait_for_agents(["worker", "relay"])
        seen: list[Any] = []
        assert await caller.call("relay", "relay", on_progress=seen.append) == "done"
        assert seen == [{"child": [{"step": 0}, {"step": 1}]}]
        before = caller.bus.caller.stats.progress_dropped
        assert await caller.call("worker", "steps", {"n": 4}) == "done"
        with anyio.fail_after(5):
            while caller.bus.caller.stats.progress_dropped < before + 4:
                await anyio.sleep(0.01)


async def test_a_callback_that_raises_does_not_break_the_call(settings: Settings) -> None:
    async with Runtime(settings) as host, Runtime(settings) as caller:
        await host.serve(worker())
        await caller.wait_for_agents(["worker"])

        def explode(update: Any) -> None:
            raise RuntimeError("callback bug")

        assert await caller.call("worker", "steps", {"n": 2}, on_progress=explode) == "done"
        assert await caller.call("worker", "steps", {"n": 1}) == "done"
