"""Plain bus agents the adapter tests serve beside a framework's agent, what a test sees of
them, and the marks the framework agents leave in ``$A2A_TEST_MARKS`` for a test to see."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from a2a import Agent, Context, Runtime


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
