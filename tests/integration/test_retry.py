"""A caller's retry policy: errors that are safe to retry are sent again with back-off,
within the call's one deadline; others are not (real nats-server and Redis)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from a2a import Agent, CallOptions, Context, Retry, Runtime, Settings
from a2a.errors import AgentError, NoResponders

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

runs: list[str] = []

late = Agent("late")


@late.action("hello")
async def _hello(ctx: Context, params: dict[str, Any]) -> str:
    runs.append("hello")
    return "hi"


@late.action("broken")
async def _broken(ctx: Context, params: dict[str, Any]) -> str:
    runs.append("broken")
    raise RuntimeError("disk full")


asker = Agent("asker")


@asker.action("ask")
async def _ask(ctx: Context, params: dict[str, Any]) -> Any:
    return await ctx.call("late", "hello", retry=Retry(attempts=8, backoff=0.1, max_backoff=0.2))


async def test_a_target_that_comes_up_during_the_back_off_answers(settings: Settings) -> None:
    runs.clear()
    async with Runtime(settings) as rt, Runtime(settings) as there:
        await rt.serve(asker)
        with pytest.raises(NoResponders):  # no policy: the first error is the call's
            await rt.call("late", "hello")

        async def serve_later() -> None:
            await anyio.sleep(0.4)
            await there.serve(late)

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_later)
            assert await rt.call("asker", "ask", timeout=10) == "hi"
        retried = CallOptions(retry=Retry(attempts=3, backoff=0.05))
        with pytest.raises(AgentError):  # not safe to retry: sent once
            await rt.request("late", "broken", None, retried)
    assert runs == ["hello", "broken"]


async def test_retries_end_with_the_last_error_by_the_deadline(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        few = CallOptions(timeout=10, retry=Retry(attempts=3, backoff=0.05))
        started = time.monotonic()
        with pytest.raises(NoResponders):
            await rt.request("nobody", "hello", None, few)
        assert time.monotonic() - started < 2  # three quick attempts, not the whole deadline
        many = CallOptions(timeout=0.6, retry=Retry(attempts=1000, backoff=0.05, max_backoff=0.1))
        started = time.monotonic()
        with pytest.raises(NoResponders):
            await rt.request("nobody", "hello", None, many)
        assert 0.4 < time.monotonic() - started < 1.0  # as many as the deadline left time for
    with pytest.raises(ValueError):
        Retry(attempts=0)
