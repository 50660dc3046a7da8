"""Calls cross the leaf link both ways: by name, by capability, nested, with deadlines and cancels."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime, by_capability
from a2a.errors import DeadlineExceeded

from .conftest import HUB_AGENT, SITE_AGENT, Side, World, until_reachable

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(30)]


def across(world: World, direction: str) -> tuple[Runtime, Side]:
    """The calling runtime on one side and the side it calls on the other."""
    if direction == "site->hub":
        return world.site.caller, world.hub
    return world.hub.caller, world.site


async def test_a_call_by_name_crosses_the_link_both_ways(world: World) -> None:
    with anyio.fail_after(2):
        from_site = await world.site.caller.call(HUB_AGENT, "where", timeout=1)
        from_hub = await world.hub.caller.call(SITE_AGENT, "where", timeout=1)
    hub_instance = world.hub.host.hosts[HUB_AGENT].instance_id
    site_instance = world.site.host.hosts[SITE_AGENT].instance_id
    assert from_site == {"agent": HUB_AGENT, "instance": hub_instance, "hop": 1}
    assert from_hub == {"agent": SITE_AGENT, "instance": site_instance, "hop": 1}


async def test_a_call_by_capability_crosses_the_link_to_the_only_instance_offering_it(world: World) -> None:
    with anyio.fail_after(2):
        plan = await world.site.caller.call(by_capability("hq.plan"), "where", timeout=1)
        sense = await world.hub.caller.call(by_capability("site.sense"), "where", timeout=1)
    assert plan["agent"] == HUB_AGENT and sense["agent"] == SITE_AGENT
    # Routing scores instances from the shared registry, wherever they run: the hub's is
    # the better "text.echo" instance, so a caller on the site crosses the link for it.
    echo = await world.site.caller.call(by_capability("text.echo"), "where", timeout=1)
    assert echo["agent"] == HUB_AGENT


async def test_a_delegation_chain_crosses_the_link_there_and_back(world: World) -> None:
    # site caller -> hq (on the hub) -> site (back on the leaf), counting hops on the way.
    out = await world.site.caller.call(
        HUB_AGENT, "ask", {"capability": "site.sense", "action": "where"}, timeout=2
    )
    assert out["via"] == HUB_AGENT and out["hop"] == 1
    assert out["result"]["agent"] == SITE_AGENT and out["result"]["hop"] == 2


@pytest.mark.parametrize("direction", ["site->hub", "hub->site"])
async def test_the_deadline_holds_across_the_link_and_cancels_the_callee(
    world: World, direction: str
) -> None:
    caller, callee = across(world, direction)
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded) as info:
        await caller.call(callee.agent, "hold", timeout=0.5)
    elapsed = anyio.current_time() - start
    assert 0.45 <= elapsed < 0.9, elapsed  # at the deadline (the callee may give up a hair first)
    assert info.value.agent == callee.agent
    with anyio.fail_after(1):
        await callee.handled.cancelled.wait()  # the handler on the far side was cancelled
    assert callee.handled.cancelled_at is not None and callee.handled.cancelled_at - start < 1.0
    assert len(caller.bus.pending) == 0


@pytest.mark.parametrize("direction", ["site->hub", "hub->site"])
async def test_a_callers_cancel_crosses_the_link_and_reaches_the_handler(
    world: World, direction: str
) -> None:
    caller, callee = across(world, direction)
    async with anyio.create_task_group() as tg:
        tg.start_soon(caller.call, callee.agent, "hold", None)  # the default deadline: 5 s
        with anyio.fail_after(2):
            await callee.handled.started.wait()
        cancelled_at = anyio.current_time()
        tg.cancel_scope.cancel()
    with anyio.fail_after(1):  # long before the call's own deadline: the cancel notice did it
        await callee.handled.cancelled.wait()
    assert callee.handled.cancelled_at is not None and callee.handled.cancelled_at - cancelled_at < 1.0
    assert await caller.call(callee.agent, "where", timeout=1) == {
        "agent": callee.agent,
        "instance": callee.host.hosts[callee.agent].instance_id,
        "hop": 1,
    }


async def test_an_agent_served_on_both_sides_answers_by_name_from_the_callers_side(world: World) -> None:
    pool: dict[str, str] = {}
    for side in (world.hub, world.site):
        agent = Agent("pool")

        @agent.action("where")
        async def where(ctx: Context, params: dict[str, Any]) -> Any:
            return ctx.instance_id

        (host,) = await side.host.serve(agent)
        pool[side.agent] = host.instance_id
    for side in (world.hub, world.site):
        await until_reachable(side.caller, "pool")
        # NATS serves a queue group's members on the publisher's side of a leaf link first.
        answers = {await side.caller.call("pool", "where", timeout=1) for _ in range(10)}
        assert answers == {pool[side.agent]}
