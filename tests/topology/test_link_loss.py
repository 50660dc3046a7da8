"""Losing the leaf link: calls across it end with typed errors by their deadline; each side goes on.

Two ways a site loses its uplink (tests.topology.link): the connection closes (the leaf
knows at once and withdraws the hub's interest) or it goes silent (nobody knows until
pings fail). Runtimes stay connected to their own servers throughout; only the link breaks.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from urllib.parse import urlsplit

import anyio
import pytest

from a2a import CallOptions, Runtime, by_capability
from a2a.errors import A2AError, AgentLost, DeadlineExceeded, NoCapableAgent, NoResponders
from bus.ids import new_id

from .conftest import (
    HUB_AGENT,
    HUB_CAPABILITIES,
    SITE_AGENT,
    SITE_CAPABILITIES,
    World,
    open_side,
    side_settings,
    until_reachable,
)
from .link import Link
from .servers import Topology

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(30)]


class Held:
    """A call from the site to the hub's ``hold``, and the error it ended with."""

    def __init__(self, world: World, timeout: float) -> None:
        self.world = world
        self.timeout = timeout
        self.request_id = new_id()
        self.error: A2AError | None = None
        self.started_at = 0.0
        self.elapsed = 0.0

    async def run(self) -> None:
        self.started_at = anyio.current_time()
        try:
            await self.world.site.caller.request(
                HUB_AGENT, "hold", options=CallOptions(timeout=self.timeout, request_id=self.request_id)
            )
        except A2AError as exc:
            self.error, self.elapsed = exc, anyio.current_time() - self.started_at

    async def handler_ends_at_the_deadline(self) -> None:
        """The hub's handler is cancelled at the call's deadline, by its own runtime."""
        handled = self.world.hub.handled
        with anyio.fail_after(self.started_at + self.timeout + 1 - anyio.current_time()):
            await handled.cancelled.wait()
        assert handled.cancelled_at is not None
        assert self.timeout - 0.1 <= handled.cancelled_at - self.started_at < self.timeout + 0.5

    async def handler_withdrawn(self) -> None:
        """The hub's handler is cancelled before the call's deadline: its caller is unreachable."""
        with anyio.fail_after(self.started_at + self.timeout - anyio.current_time()):
            await self.world.hub.handled.cancelled.wait()

    async def acknowledged(self) -> None:
        """The hub's handler runs and has acknowledged the call: the caller now probes its instance."""
        pending = self.world.site.caller.bus.caller.pending
        with anyio.fail_after(2):
            await self.world.hub.handled.started.wait()
            while (slot := pending.get(self.request_id)) is None or slot.instance is None:
                await anyio.sleep(0.02)


async def answered_by(caller: Runtime, target: object) -> str:
    """The agent that answered a ``where`` call."""
    out = await caller.call(target, "where", timeout=1)  # type: ignore[arg-type]
    return str(out["agent"])


async def within_each_side_calls_go_on(world: World) -> None:
    site, hub = world.site.caller, world.hub.caller
    with anyio.fail_after(2):
        assert await answered_by(site, SITE_AGENT) == SITE_AGENT
        assert await answered_by(site, by_capability("site.sense")) == SITE_AGENT
        assert await answered_by(hub, HUB_AGENT) == HUB_AGENT
        assert await answered_by(hub, by_capability("hq.plan")) == HUB_AGENT


async def fails_at_once(caller: Runtime, target: object, error: type[A2AError]) -> A2AError:
    """The call fails with ``error`` well before its deadline (the server knows nobody listens)."""
    start = anyio.current_time()
    with pytest.raises(error) as info:
        await caller.call(target, "where", timeout=2)  # type: ignore[arg-type]
    assert anyio.current_time() - start < 0.5
    return info.value


async def test_a_cut_link_gives_typed_errors_at_once_and_each_side_keeps_working(
    world: World, link: Topology
) -> None:
    held = Held(world, 6.0)  # room for the hub to find the caller gone (two checks, 2 s apart)
    async with anyio.create_task_group() as tg:
        tg.start_soon(held.run)
        await held.acknowledged()
        await anyio.to_thread.run_sync(link.cut)

        # New calls across the link: the leaf no longer knows anyone who listens.
        assert (await fails_at_once(world.site.caller, HUB_AGENT, NoResponders)).agent == HUB_AGENT
        assert (await fails_at_once(world.hub.caller, SITE_AGENT, NoResponders)).agent == SITE_AGENT
        # The registry (Redis) still lists the far instance; routing tries it, finds nobody
        # serving it, and has no other instance to offer.
        await fails_at_once(world.site.caller, by_capability("hq.plan"), NoCapableAgent)
        await fails_at_once(world.hub.caller, by_capability("site.sense"), NoCapableAgent)
        # A capability offered on both sides is served by the reachable instance instead.
        assert await answered_by(world.site.caller, by_capability("text.echo")) == SITE_AGENT
        await within_each_side_calls_go_on(world)

    # The call in hand when the link went: its instance stopped answering probes.
    assert isinstance(held.error, AgentLost), held.error
    assert held.error.details["instance"] == world.hub.host.hosts[HUB_AGENT].instance_id
    assert held.elapsed < held.timeout, held.elapsed  # before its deadline
    # The caller's cancel could not cross, but the hub finds the calling runtime unreachable
    # (its check gets "no responders") and stops the handler before the call's deadline.
    await held.handler_withdrawn()

    await anyio.to_thread.run_sync(link.restore)
    await until_reachable(world.site.caller, HUB_AGENT)
    await until_reachable(world.hub.caller, SITE_AGENT)


async def test_a_silent_link_ends_calls_across_it_at_their_deadline(world: World, link: Topology) -> None:
    held = Held(world, 1.5)
    async with anyio.create_task_group() as tg:
        tg.start_soon(held.run)
        await held.acknowledged()
        link.blackhole()
        # The leaf still believes the hub listens: the request goes out and nothing comes back.
        start = anyio.current_time()
        with pytest.raises(DeadlineExceeded):
            await world.site.caller.call(HUB_AGENT, "where", timeout=0.5)
        assert 0.45 <= anyio.current_time() - start < 1.0
        await within_each_side_calls_go_on(world)

    # Probes of the holding instance go unanswered too: not known lost, so the deadline ends it.
    assert isinstance(held.error, DeadlineExceeded), held.error
    assert 1.45 <= held.elapsed < 2.0, held.elapsed
    await held.handler_ends_at_the_deadline()


async def test_after_the_link_returns_routing_by_capability_finds_the_far_instance_again(
    world: World, link: Topology
) -> None:
    await anyio.to_thread.run_sync(link.cut)
    with pytest.raises(NoCapableAgent):
        await world.site.caller.call(by_capability("hq.plan"), "where", timeout=1)
    await anyio.to_thread.run_sync(link.restore)
    await until_reachable(world.site.host, HUB_AGENT)  # interest is back (another runtime asks)
    with anyio.move_on_after(2.0):  # several heartbeats, past the view's quarantine of the instance
        while True:
            try:
                out = await world.site.caller.call(by_capability("hq.plan"), "where", timeout=1)
            except NoCapableAgent:
                await anyio.sleep(0.1)
                continue
            assert out["agent"] == HUB_AGENT
            return
    pytest.fail("the site's runtime still routes nothing to hq.plan")


async def test_a_site_cut_off_from_the_hub_and_its_redis_keeps_calling_its_own_agents(
    link: Topology, redis_url: str, namespace: str
) -> None:
    # The site reaches Redis through its uplink too: a second forwarder, cut with the link.
    redis = urlsplit(redis_url)
    uplink = Link((redis.hostname or "127.0.0.1", redis.port or 6379)).restore()
    userinfo = redis.netloc.rpartition("@")[0]
    site_redis = redis._replace(netloc=f"{userinfo}@127.0.0.1:{uplink.port}".lstrip("@")).geturl()
    try:
        async with AsyncExitStack() as stack:
            hub = await open_side(
                stack, side_settings(link.hub_url, redis_url, namespace), HUB_AGENT, HUB_CAPABILITIES
            )
            site = await open_side(
                stack, side_settings(link.leaf_url, site_redis, namespace), SITE_AGENT, SITE_CAPABILITIES
            )
            await site.caller.wait_for_agents([HUB_AGENT, SITE_AGENT], timeout=5)
            await until_reachable(site.caller, HUB_AGENT)

            uplink.cut()
            await anyio.to_thread.run_sync(link.cut)
            await fails_at_once(site.caller, HUB_AGENT, NoResponders)
            # By name as ever, by capability from the registry view it last knew.
            with anyio.fail_after(2):
                assert await answered_by(site.caller, SITE_AGENT) == SITE_AGENT
                assert await answered_by(site.caller, by_capability("site.sense")) == SITE_AGENT
                assert await answered_by(hub.caller, HUB_AGENT) == HUB_AGENT
    finally:
        uplink.close()
