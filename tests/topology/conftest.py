"""Fixtures: a hub cluster and a site's leaf node (started once), and runtimes on both sides.

The registry is one Redis (``redis_url``) both sides reach; NATS carries the calls, over
the leaf link when caller and callee are on different sides. Each test gets a fresh
namespace, so registries, audit streams and subjects never mix between tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.errors import NoResponders

from .agents import Handled, side_agent
from .servers import Topology

HUB_AGENT = "hq"
SITE_AGENT = "site"
# "text.echo" is offered on both sides, the hub's instance preferred; the other capability
# of each agent exists only on its own side.
HUB_CAPABILITIES = {"hq.plan": 0.9, "text.echo": 0.9}
SITE_CAPABILITIES = {"site.sense": 0.9, "text.echo": 0.5}


@dataclass
class Side:
    """One side of the link: a runtime hosting the side's agent, and one that only calls."""

    host: Runtime
    caller: Runtime
    agent: str
    handled: Handled


@dataclass
class World:
    hub: Side
    site: Side
    topology: Topology


@pytest.fixture(scope="package")
def topology() -> Iterator[Topology]:
    topology = Topology.start()
    try:
        yield topology
    finally:
        topology.stop()


@pytest.fixture
def link(topology: Topology) -> Iterator[Topology]:
    """The topology, for a test that breaks the link: restored afterwards, whatever happened."""
    try:
        yield topology
    finally:
        topology.restore()


def side_settings(nats_url: str, redis_url: str, namespace: str) -> Settings:
    return Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace=namespace,
        heartbeat_interval=0.25,
        default_timeout=5.0,
        open=True,
    )


async def open_side(
    stack: AsyncExitStack, settings: Settings, agent: str, capabilities: dict[str, float]
) -> Side:
    host = await stack.enter_async_context(Runtime(settings))
    caller = await stack.enter_async_context(Runtime(settings))
    served, handled = side_agent(agent, capabilities)
    await host.serve(served)
    return Side(host, caller, agent, handled)


async def until_reachable(caller: Runtime, agent: str, timeout: float = 5.0) -> None:
    """Call ``agent`` by name until it answers: interest crosses the link a moment after serving."""
    with anyio.fail_after(timeout):
        while True:
            try:
                await caller.call(agent, "where", timeout=1.0)
                return
            except NoResponders:
                await anyio.sleep(0.02)


@pytest.fixture
async def world(topology: Topology, redis_url: str, namespace: str) -> AsyncIterator[World]:
    """``hq`` served on the hub, ``site`` on the leaf; each side with a calling runtime too."""
    topology.wait_link_up()
    async with AsyncExitStack() as stack:
        hub = await open_side(
            stack, side_settings(topology.hub_url, redis_url, namespace), HUB_AGENT, HUB_CAPABILITIES
        )
        site = await open_side(
            stack, side_settings(topology.leaf_url, redis_url, namespace), SITE_AGENT, SITE_CAPABILITIES
        )
        for rt in (hub.caller, site.caller):
            await rt.wait_for_agents([HUB_AGENT, SITE_AGENT], timeout=5)
        await until_reachable(site.caller, HUB_AGENT)
        await until_reachable(hub.caller, SITE_AGENT)
        yield World(hub, site, topology)
