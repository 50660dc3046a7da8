"""Agents the command-line tests serve in processes of their own (``a2a serve tests.cli.agents:...``)."""

from __future__ import annotations

from typing import Any

import anyio

from a2a import Agent, Context

stepper = Agent("stepper", description="takes steps, saying each as it goes", max_concurrency=4)


@stepper.action(
    "walk",
    input_schema={
        "type": "object",
        "required": ["steps"],
        "properties": {
            "steps": {"type": "integer", "minimum": 0, "maximum": 20},
            "pause": {"type": "number", "minimum": 0},
        },
    },
    description="take some steps, a progress update after each",
)
async def _walk(ctx: Context, params: dict[str, Any]) -> Any:
    for step in range(1, params["steps"] + 1):
        await anyio.sleep(params.get("pause", 0.2))
        await ctx.progress({"step": step})
    return {"walked": params["steps"]}


@stepper.action("echo")
async def _echo(ctx: Context, params: dict[str, Any]) -> Any:
    return params


@stepper.action("meta")
async def _meta(ctx: Context, params: dict[str, Any]) -> Any:
    """What the request carried: its conversation, user, budget and hop limit."""
    return {
        "conversation": ctx.conversation_id,
        "correlation": ctx.correlation_id,
        "user": ctx.user_id,
        "budget": ctx.budget_left,
        "maxHops": ctx.request.metadata.max_hops,
    }
