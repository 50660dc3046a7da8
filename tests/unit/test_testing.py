"""a2a.testing as a user's own test suite would use it, outside this project's fixtures."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Policy, Roster
from a2a.errors import DeadlineExceeded, NoResponders, PermissionDenied
from a2a.testing import TestBroker

pytestmark = pytest.mark.anyio

greeter = Agent("greeter")


@greeter.action("greet")
async def greet(ctx: Context, params: dict[str, Any]) -> str:
    await anyio.sleep(params.get("wait", 0))
    return f"hello {params['name']}"


@greeter.action("relay")
async def relay(ctx: Context, params: dict[str, Any]) -> Any:
    return await ctx.call(params["to"], "greet", {"name": "relay"})


async def test_a_broker_and_a_runtime_in_two_lines() -> None:
    async with TestBroker() as broker, broker.runtime(greeter) as rt:
        assert await rt.call("greeter", "greet", {"name": "ada"}) == "hello ada"
        with pytest.raises(NoResponders):  # at once, as nats-server answers
            await rt.call("nobody", "greet")
        with pytest.raises(DeadlineExceeded):  # real time
            await rt.call("greeter", "greet", {"name": "x", "wait": 5}, timeout=0.1)


async def test_runtime_options_and_settings_pass_through() -> None:
    roster = Roster.from_dict({"defaults": {"allow_sub_agent_calls": False}})
    async with TestBroker() as broker, broker.runtime(greeter, policy=Policy(roster), namespace="t1") as rt:
        assert rt.settings.namespace == "t1" and rt.registry is not None and rt.registry.namespace == "t1"
        with pytest.raises(PermissionDenied):
            await rt.call("greeter", "relay", {"to": "greeter"})
