"""Plain bus agents the adapter tests serve beside a framework's agent, what a test sees of
them, and the marks the framework agents leave in ``$A2A_TEST_MARKS`` for a test to see."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from a2a import Agent, Context, DelegationResult, Runtime
from a2a.delegation.views import SubAgentArgs


def mark(name: str, what: str) -> None:
    """Leave ``<name>.<what>`` in ``$A2A_TEST_MARKS`` (when set)."""
    marks = os.environ.get("A2A_TEST_MARKS")
    if marks:
        (Path(marks) / f"{name}.{what}").write_text(what)


async def wait_until_cancelled(name: str) -> str:
    """Wait for something that never comes, leaving ``<name>.waiting`` on the way in and
    ``<name>.cancelled`` when cancelled."""
    mark(name, "waiting")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        mark(name, "cancelled")
        raise
    return "unreachable"


@dataclass
class Bus:
    rt: Runtime
    marks: Path
    probed: list[dict[str, Any]] = field(default_factory=list)
    """What the plain agent ``probe`` saw of each request it got."""
    delegated: list[dict[str, Any]] = field(default_factory=list)
    """Seed 000's arguments of each task the plain agent ``worker`` got."""

    async def wait_for(self, mark: str, timeout: float = 5.0) -> float:
        """Wait until the file ``mark`` appears among the marks; return how long that took."""
        start = anyio.current_time()
        with anyio.fail_after(timeout):
            while not (self.marks / mark).exists():
                await anyio.sleep(0.01)
        return anyio.current_time() - start


def probe_agent(seen: list[dict[str, Any]]) -> Agent:
    """A plain bus agent that answers with the lineage of the request it got."""
    probe = Agent("probe")

    @probe.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        meta = ctx.request.metadata
        lineage = {
            "text": params.get("text"),
            "depth": ctx.depth,
            "hop": ctx.hop,
            "chain": meta.call_chain,
            "parent": meta.parent_id,
            "correlation": meta.correlation_id,
            "user": ctx.user_id,
            "conversation": ctx.conversation_id,
            "budget": meta.budget,
        }
        seen.append(lineage)
        return lineage

    return probe


def outer_agent(target: str) -> Agent:
    """A plain bus agent that asks ``target`` and says how many tokens its own call used."""
    outer = Agent("outer")

    @outer.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        answer = await ctx.call(target, "run", {"text": params["text"]})
        return {"answer": answer, "used": ctx.usage.total}

    return outer


def worker_agent(seen: list[dict[str, Any]]) -> Agent:
    """A plain bus agent taking delegated tasks: it keeps seed 000's arguments of each (and
    whether a filtered context came), answers ``worker did: <task>``, and answers
    ``status="failed"`` with the error ``the disk is full`` to a task starting with ``fail``."""
    worker = Agent("worker")

    @worker.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> DelegationResult:
        args = SubAgentArgs.from_envelope(ctx.request)
        d = ctx.request.delegation
        seen.append(
            {
                "task": args.task,
                "input": args.input,
                "max_context_tokens": args.max_context_tokens,
                "allowed_tools": args.allowed_tools,
                "allow_nested_calls": args.allow_nested_calls,
                "context": d is not None and d.context is not None,
            }
        )
        if args.task.startswith("fail"):
            return DelegationResult(summary="could not", status="failed", error="the disk is full")
        return DelegationResult(summary="done", result=f"worker did: {args.task}")

    return worker


def boss_agent() -> Agent:
    """A plain bus agent delegating ``{"target", "text", "allowed_tools"?}`` and answering
    with the delegation's result and the tools the callee reports it used."""
    boss = Agent("boss")

    @boss.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        response = await ctx.delegate(
            params["target"],
            params["text"],
            action="run",
            allowed_tools=params.get("allowed_tools"),
            allow_nested_calls=True,
        )
        return {"result": response.result, "tool_calls": response.tool_calls}

    return boss


DELEGATION = {
    "agent_name": "worker",
    "task": "tidy the logs",
    "context": {"last_messages": 2, "roles": ["user"]},
    "input": {"path": "/var/log"},
    "max_context_tokens": 300,
    "allowed_tools": ["read_file"],
    "allow_nested_calls": False,
}
"""Seed 000's arguments, every field filled in, as a fake model sends them to ``delegate``."""

DELEGATED = {
    "task": "tidy the logs",
    "input": {"path": "/var/log"},
    "max_context_tokens": 300,
    "allowed_tools": ["read_file"],
    "allow_nested_calls": False,
    "context": True,
}
"""What the worker gets of :data:`DELEGATION`."""
