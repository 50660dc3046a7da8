"""Agents the tests run, in-process or as separate OS processes (``a2a serve tests.agents:...``)."""

from __future__ import annotations

import os
from typing import Any

import anyio

from a2a import A2AError, Agent, AgentCapability, Context, by_capability

echo = Agent(
    "echo",
    capabilities=[
        AgentCapability(id="echo", proficiency=0.5),
        AgentCapability(id="text", proficiency=0.7),
    ],
    max_concurrency=8,
)


@echo.action("echo")
async def _echo(ctx: Context, params: dict[str, Any]) -> Any:
    return params


@echo.action("whoami")
async def _whoami(ctx: Context, params: dict[str, Any]) -> Any:
    return {"instance": ctx.instance_id, "pid": os.getpid()}


@echo.action(
    "sleep",
    input_schema={
        "type": "object",
        "required": ["seconds"],
        "properties": {"seconds": {"type": "number", "minimum": 0}},
    },
)
async def _sleep(ctx: Context, params: dict[str, Any]) -> Any:
    try:
        await anyio.sleep(params["seconds"])
    except anyio.get_cancelled_exc_class():
        if params.get("marker"):
            with open(params["marker"], "w") as f:  # noqa: ASYNC230 - must not await while cancelled
                f.write("cancelled")
        raise
    return {"slept": params["seconds"], "instance": ctx.instance_id, "pid": os.getpid()}


@echo.action("logged", input_schema={"type": "object", "required": ["log", "id"]})
async def _logged(ctx: Context, params: dict[str, Any]) -> Any:
    """Note the run in params.log (a line: the call's id, this process), then sleep ``seconds``."""
    with open(params["log"], "a") as f:  # noqa: ASYNC230 - one short line
        f.write(f"{params['id']} {os.getpid()}\n")
    await anyio.sleep(params.get("seconds", 0))
    return params["id"]


@echo.action("big", input_schema={"type": "object", "required": ["size"]})
async def _big(ctx: Context, params: dict[str, Any]) -> Any:
    return "x" * params["size"]


@echo.action("fail")
async def _fail(ctx: Context, params: dict[str, Any]) -> Any:
    raise RuntimeError(params.get("message", "boom"))


relay = Agent("relay", capabilities=[AgentCapability(id="relay", proficiency=0.9)])


@relay.action("forward", input_schema={"type": "object", "required": ["action"]})
async def _forward(ctx: Context, params: dict[str, Any]) -> Any:
    """Call params.target.action with params.params (after params.delay seconds); report what
    came back or the error code."""
    await anyio.sleep(params.get("delay", 0))
    target = by_capability(*params["capabilities"]) if params.get("capabilities") else params["target"]
    try:
        result = await ctx.call(target, params["action"], params.get("params"), timeout=params.get("timeout"))
    except A2AError as exc:
        if params.get("catch"):
            return {"error": exc.code, "agent": exc.agent, "hop": exc.hop}
        raise
    return {"via": ctx.instance_id, "result": result, "hop": ctx.hop, "depth": ctx.depth}


def gated_agent(max_concurrency: int) -> tuple[Agent, anyio.Event]:
    """``gated.echo`` waits for the returned event: calls pile up, then all answer in one turn."""
    gate = anyio.Event()
    agent = Agent("gated", max_concurrency=max_concurrency)

    @agent.action("echo")
    async def _gated_echo(ctx: Context, params: dict[str, Any]) -> Any:
        await gate.wait()
        return params

    return agent, gate
