"""Token budgets of calls a handler makes in parallel (frameworks run tool calls at once)."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from a2a import Agent, Context
from a2a.errors import BudgetExceeded
from a2a.testing import TestBroker

pytestmark = pytest.mark.anyio


def agents() -> list[Agent]:
    worker = Agent("worker")

    @worker.action("spend")
    async def spend(ctx: Context, params: dict[str, Any]) -> Any:
        budget = ctx.request.metadata.budget
        ctx.report_usage(completion=params["tokens"])
        return {"budget": budget}

    boss = Agent("boss")

    @boss.action("parallel")
    async def parallel(ctx: Context, params: dict[str, Any]) -> Any:
        seen: list[Any] = []

        async def one() -> None:
            seen.append(await ctx.call("worker", "spend", {"tokens": params["each"]}))

        async with anyio.create_task_group() as tg:
            for _ in range(params["calls"]):
                tg.start_soon(one)
        after: Any = None
        try:
            await ctx.call("worker", "spend", {"tokens": 1})
        except BudgetExceeded as exc:
            after = exc.code
        return {"budgets": [s["budget"] for s in seen], "left": ctx.budget_left, "after": after}

    @boss.action("held")
    async def held(ctx: Context, params: dict[str, Any]) -> Any:
        async def explicit() -> None:
            await ctx.call("worker", "spend", {"tokens": 10}, budget=600)

        async with anyio.create_task_group() as tg:
            tg.start_soon(explicit)
            await anyio.lowlevel.checkpoint()
            with pytest.raises(BudgetExceeded):  # 600 are held: 400 left, 500 is too much
                await ctx.call("worker", "spend", {"tokens": 1}, budget=500)
        return ctx.budget_left

    return [worker, boss]


async def test_parallel_calls_without_an_amount_share_what_is_left() -> None:
    async with TestBroker() as broker, broker.runtime(*agents()) as rt:
        out = await rt.call("boss", "parallel", {"calls": 3, "each": 100}, budget=1000)
        assert out == {"budgets": [1000, 1000, 1000], "left": 699, "after": None}


async def test_parallel_siblings_that_overspend_refuse_the_next_call() -> None:
    async with TestBroker() as broker, broker.runtime(*agents()) as rt:
        response = await rt.request("boss", "parallel", {"calls": 2, "each": 300}, budget=500)
        assert response.payload.result["after"] == "BUDGET_EXCEEDED"
        assert response.payload.result["left"] == -100
        assert response.payload.usage is not None and response.payload.usage.total == 600


async def test_an_explicit_amount_is_held_until_its_call_settles() -> None:
    async with TestBroker() as broker, broker.runtime(*agents()) as rt:
        assert await rt.call("boss", "held", budget=1000) == 990
