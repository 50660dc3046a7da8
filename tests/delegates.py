"""Agents for the delegation tests; run them in separate processes with ``A2A_ROSTER=tests/roster.yaml``."""

from __future__ import annotations

import os
from typing import Any

import anyio
import msgspec

from a2a import (
    A2AError,
    Agent,
    Artifact,
    Context,
    ContextFilter,
    DelegationResult,
    DelegationStep,
    HandoffData,
    SourceRef,
    by_capability,
)

_STEP_KEYS = (
    "objective",
    "action",
    "max_context_tokens",
    "input",
    "thread_mode",
    "thread_id",
    "allowed_tools",
    "allow_nested_calls",
    "budget",
    "timeout",
)
"""Fields a spec may give; those it leaves out keep DelegationStep's (seed 000's) defaults."""


def _options(spec: dict[str, Any]) -> dict[str, Any]:
    options = {k: spec[k] for k in _STEP_KEYS if k in spec}
    if spec.get("context") is not None:
        options["context"] = ContextFilter(**spec["context"])
    if spec.get("references") is not None:
        options["handoff"] = HandoffData(references=[SourceRef(**r) for r in spec["references"]])
    return options


def _target(spec: dict[str, Any]) -> Any:
    return by_capability(*spec["capabilities"]) if spec.get("capabilities") else spec["target"]


def _step(spec: dict[str, Any]) -> DelegationStep:
    return DelegationStep(target=_target(spec), task=spec.get("task", "do it"), **_options(spec))


def make(name: str) -> Agent:
    agent = Agent(name, max_concurrency=16)

    @agent.action("forward", input_schema={"type": "object", "required": ["target", "action"]})
    async def forward(ctx: Context, p: dict[str, Any]) -> Any:
        try:
            result = await ctx.call(
                p["target"],
                p["action"],
                p.get("params"),
                timeout=p.get("timeout"),
                budget=p.get("budget"),
                allowed_tools=p.get("allowed_tools"),
                allow_nested_calls=p.get("allow_nested_calls", True),
            )
        except A2AError as exc:
            if p.get("catch"):
                return {"error": exc.code, "agent": exc.agent, "hop": exc.hop}
            raise
        return {"via": name, "result": result, "depth": ctx.depth, "usage": ctx.usage.total}

    @agent.action("delegate")
    async def delegate(ctx: Context, p: dict[str, Any]) -> Any:
        return await ctx.delegate(_target(p), p.get("task", "do it"), **_options(p))

    @agent.action("chain")
    async def chain(ctx: Context, p: dict[str, Any]) -> Any:
        return await ctx.chain([_step(s) for s in p["steps"]])

    @agent.action("fan")
    async def fan(ctx: Context, p: dict[str, Any]) -> Any:
        try:
            out = await ctx.fan_out(
                [_step(s) for s in p["steps"]], gather=p.get("gather", "all"), quorum=p.get("quorum")
            )
        except A2AError as exc:
            return {"error": exc.code, "agent": exc.agent}
        return {"responses": out.responses, "dropped": out.dropped, "succeeded": out.succeeded}

    @agent.action("parallel")
    async def parallel(ctx: Context, p: dict[str, Any]) -> Any:
        outcomes: list[str] = []

        async def one() -> None:
            try:
                await ctx.call(p["target"], p["action"], p.get("params"))
                outcomes.append("ok")
            except A2AError as exc:
                outcomes.append(exc.code)

        async with anyio.create_task_group() as tg:
            for _ in range(p["n"]):
                tg.start_soon(one)
                await anyio.sleep(0.01)
        return sorted(outcomes)

    @agent.action("use_tool")
    async def use_tool(ctx: Context, p: dict[str, Any]) -> Any:
        ctx.authorize_tool(p["tool"])
        return {"used": p["tool"]}

    @agent.action("spend")
    async def spend(ctx: Context, p: dict[str, Any]) -> Any:
        ctx.report_usage(prompt=p.get("prompt", 0), completion=p.get("completion", 0))
        return {"left": ctx.budget_left}

    @agent.action("expensive", estimated_tokens=500)
    async def expensive(ctx: Context, p: dict[str, Any]) -> Any:
        return "done"

    @agent.action("remaining")
    async def remaining(ctx: Context, p: dict[str, Any]) -> Any:
        return {"remaining": ctx.remaining(), "budget": ctx.request.metadata.budget, "depth": ctx.depth}

    @agent.action("sleep")
    async def sleep(ctx: Context, p: dict[str, Any]) -> Any:
        try:
            await anyio.sleep(p["seconds"])
        except anyio.get_cancelled_exc_class():
            if p.get("marker"):
                with open(p["marker"], "w") as f:  # noqa: ASYNC230 - must not await while cancelled
                    f.write(f"cancelled {name}")
            raise
        return {"slept": p["seconds"], "by": name}

    @agent.action("whoami")
    async def whoami(ctx: Context, p: dict[str, Any]) -> Any:
        return {"agent": name, "pid": os.getpid(), "user": ctx.user_id, "conversation": ctx.conversation_id}

    @agent.action("task")
    async def task(ctx: Context, p: dict[str, Any]) -> DelegationResult:
        """A delegated task: reports what it received (the test inspects it)."""
        d = ctx.delegation
        assert d is not None
        if p.get("sleep"):
            await anyio.sleep(p["sleep"])
        if p.get("fail"):
            raise RuntimeError(p["fail"])
        if p.get("report_failure"):  # ran, and answers that it failed
            return DelegationResult(summary="gave up", status="failed", error=p["report_failure"])
        if p.get("call"):  # a nested call of the callee's own
            await ctx.call(p["call"], "whoami")
        for tool in p.get("tools", []):
            ctx.authorize_tool(tool)
        if p.get("spend"):
            ctx.report_usage(completion=p["spend"])
        context = d.context
        thread = (
            await ctx.services.history.messages(d.child_session_id)
            if ctx.services.history and d.child_session_id
            else []
        )
        received = {
            "task": d.input,
            "objective": d.objective,
            "messages": [m.content for m in context.messages] if context else [],
            "summary": context.summary if context else None,
            "workspace": context.workspace if context else None,
            "tokens": context.total_tokens if context else 0,
            "handoff": msgspec.to_builtins(d.handoff_data),
            "thread_messages": len(thread),
            "user": ctx.user_id,
            "max_context_tokens": ctx.request.delegation.max_context_tokens,  # type: ignore[union-attr]
        }
        return DelegationResult(
            summary=f"{name} did: {d.input}",
            result=f"{name}: {d.input}",
            artifacts=[Artifact(type="json", value=received, label="what the callee received")],
            confidence=80,
            new_facts=list(p.get("learn", [])),
            used_sources=list(d.handoff_data.references or []),
            requires_followup=bool(p.get("followup")),
        )

    return agent


hop_a, hop_b, hop_c, hop_d = (make(n) for n in ("hop_a", "hop_b", "hop_c", "hop_d"))
shallow, mute, picky, reader_only = (make(n) for n in ("shallow", "mute", "picky", "reader_only"))
