"""The agent each side of the topology hosts, built per test so its events belong to that test."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio

from a2a import Agent, AgentCapability, Context, by_capability

__all__ = ["Handled", "side_agent"]


@dataclass
class Handled:
    """What happened to the side's ``hold`` handler: it started, and when it was cancelled."""

    started: anyio.Event = field(default_factory=anyio.Event)
    cancelled: anyio.Event = field(default_factory=anyio.Event)
    cancelled_at: float | None = None


def side_agent(name: str, capabilities: dict[str, float]) -> tuple[Agent, Handled]:
    """An agent with ``where`` (who answered), ``hold`` (runs until cancelled) and ``ask`` (calls on)."""
    handled = Handled()
    agent = Agent(
        name,
        capabilities=[AgentCapability(id=cap, proficiency=p) for cap, p in capabilities.items()],
        max_concurrency=8,
    )

    @agent.action("where")
    async def where(ctx: Context, params: dict[str, Any]) -> Any:
        return {"agent": name, "instance": ctx.instance_id, "hop": ctx.hop}

    @agent.action("hold")
    async def hold(ctx: Context, params: dict[str, Any]) -> Any:
        handled.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            handled.cancelled_at = anyio.current_time()
            handled.cancelled.set()
            raise

    @agent.action("ask", input_schema={"type": "object", "required": ["action"]})
    async def ask(ctx: Context, params: dict[str, Any]) -> Any:
        """Call ``target`` (a name) or ``capability`` with ``action``; return what came back."""
        target = by_capability(params["capability"]) if "capability" in params else params["target"]
        result = await ctx.call(target, params["action"], params.get("params"))
        return {"via": name, "hop": ctx.hop, "result": result}

    return agent, handled
