"""Bus agents the gateway tests serve: an echo, a slow one that records its cancellation, chains.

``newcomer`` is served only by the tests that start and stop an agent while a gateway runs.
"""

from __future__ import annotations

from typing import Any

import anyio

from a2a import Agent, AgentCapability, Context
from a2a.errors import PermissionDenied

echo = Agent(
    "echo",
    description="Repeats what it is given",
    capabilities=[AgentCapability(id="echoing", description="say it back", proficiency=0.9)],
)


@echo.action("say", input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
async def say(ctx: Context, params: dict[str, Any]) -> Any:
    return params.get("text", params)


slow = Agent("slow", capabilities=["waiting"], metadata={"defaultAction": "wait"})
CANCELLED: list[str] = []


@slow.action("wait")
async def wait(ctx: Context, params: dict[str, Any]) -> Any:
    try:
        await anyio.sleep(float(params.get("seconds", 30)))
    except anyio.get_cancelled_exc_class():
        CANCELLED.append(ctx.correlation_id)
        raise
    return "waited"


@slow.action("refuse")
async def refuse(ctx: Context, params: dict[str, Any]) -> Any:
    raise PermissionDenied("not for you")


@slow.action("whoami")
async def whoami(ctx: Context, params: dict[str, Any]) -> Any:
    return {"user": ctx.user_id, "conversation": ctx.conversation_id}


front = Agent("front", capabilities=["fronting"], metadata={"defaultAction": "relay"})


@front.action("relay")
async def relay(ctx: Context, params: dict[str, Any]) -> Any:
    return {"relayed": await ctx.call("echo", "say", {"text": params.get("text", "")})}


@front.action("steps")
async def steps(ctx: Context, params: dict[str, Any]) -> Any:
    """Reports each step as progress (a string, then objects) before the result."""
    await ctx.progress("starting")
    for i in range(int(params.get("n", 3))):
        await ctx.progress({"step": i})
    return "stepped"


chain = Agent("chain", capabilities=["chaining"])


@chain.action("slowly")
async def slowly(ctx: Context, params: dict[str, Any]) -> Any:
    """A child call that takes a while, a quick one after it, then a little work of its own.

    Hop progress comes from the audit record a callee writes when it answers, so the
    work after the slow hop gives that record time to reach the gateway's streams.
    """
    waited = await ctx.call("slow", "wait", {"seconds": float(params.get("seconds", 0.3))})
    said = await ctx.call("echo", "say", {"text": "after the wait"})
    await anyio.sleep(0.2)
    return {"waited": waited, "said": said}


newcomer = Agent(
    "newcomer",
    description="Joins the bus in the middle of a test",
    capabilities=[AgentCapability(id="arriving", description="turns up late", proficiency=0.8)],
)


@newcomer.action(
    "greet",
    input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)
async def greet(ctx: Context, params: dict[str, Any]) -> Any:
    return f"hello {params.get('name', '')}"
