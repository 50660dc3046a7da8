"""The conversation of a call from outside any agent that names none: a new one, whose id is
the new call tree's (so the compact form can leave it out), shared by every hop, every retry
and every member of a group."""

from __future__ import annotations

from typing import Any

import pytest

from a2a import Agent, CallOptions, Context, to_each
from a2a.core.retry import Retry
from a2a.errors import Overloaded
from bus.wire import RequestEnvelope

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio


def _recorder(name: str, *, fail_first: bool = False) -> tuple[Agent, list[RequestEnvelope]]:
    agent = Agent(name)
    seen: list[RequestEnvelope] = []

    @agent.action("run")
    async def _run(ctx: Context, params: dict[str, Any]) -> Any:
        assert type(ctx.request) is RequestEnvelope
        seen.append(ctx.request)
        if fail_first and len(seen) == 1:
            raise Overloaded("busy")
        if params.get("on"):
            await ctx.call(params["on"], "run", {})
        return name

    return agent, seen


async def test_a_new_conversation_is_named_after_its_call_tree(make_runtime: MakeRuntime) -> None:
    planner, above = _recorder("planner")
    coder, below = _recorder("coder")
    client = await make_runtime(planner, coder)
    await client.call("planner", "run", {"on": "coder"})
    await client.call("planner", "run", {})
    first, second = above
    assert first.conversation_id == first.metadata.correlation_id
    assert second.conversation_id == second.metadata.correlation_id != first.conversation_id
    (child,) = below
    assert child.conversation_id == first.conversation_id == child.metadata.correlation_id
    assert child.metadata.key != first.metadata.key  # the child is its own request


async def test_a_conversation_or_call_tree_given_keeps_them_apart(make_runtime: MakeRuntime) -> None:
    agent, seen = _recorder("echo")
    client = await make_runtime(agent)
    await client.call("echo", "run", {}, conversation_id="thread-7")
    await client.request("echo", "run", {}, CallOptions(correlation_id="trace-1"))
    await client.request("echo", "run", {}, CallOptions(correlation_id="trace-1"))
    await client.request("echo", "run", {}, CallOptions(request_id="order-1"))
    named, traced, traced_again, keyed = seen
    assert named.conversation_id == "thread-7" != named.metadata.correlation_id
    # A call tree the caller named may hold many calls: each still starts a conversation of its own.
    assert traced.metadata.correlation_id == traced_again.metadata.correlation_id == "trace-1"
    assert len({traced.conversation_id, traced_again.conversation_id, "trace-1"}) == 3
    assert keyed.metadata.key == "order-1" and keyed.conversation_id != "order-1"


async def test_every_attempt_of_a_retried_call_is_in_one_conversation(make_runtime: MakeRuntime) -> None:
    agent, seen = _recorder("flaky", fail_first=True)
    client = await make_runtime(agent)
    reply = await client.request("flaky", "run", {}, CallOptions(retry=Retry(backoff=0)))
    assert reply.payload.result == "flaky"
    first, again = seen
    assert first.metadata.key != again.metadata.key
    assert first.conversation_id == again.conversation_id == first.metadata.correlation_id


async def test_the_members_of_a_group_share_the_conversation_of_their_tree(make_runtime: MakeRuntime) -> None:
    one, seen_one = _recorder("one")
    two, seen_two = _recorder("two")
    client = await make_runtime(one, two)
    assert await client.call(to_each("one", "two"), "run", {}) == ["one", "two"]
    (a,), (b,) = seen_one, seen_two
    assert a.conversation_id == b.conversation_id == a.metadata.correlation_id == b.metadata.correlation_id
