"""``a2a console --demo``: a stdio local agent (``drafter``) and a bus agent (``reviewer``)
to run sessions between, with the policy that lets the one send to the other."""

from __future__ import annotations

import sys
from typing import Any

import anyio

from ..core.agent import Agent
from ..core.context import Context
from ..core.runtime import Runtime
from ..sessions import Sessions, SharedCallPolicy
from ..stdio import stdio_agent

__all__ = ["serve_demo_agents"]

_REVIEWS = [
    "Looks like a start. Which endpoints take an id from the caller?",
    "Good catch on /users/{id}. What does DELETE do for a non-admin?",
    "APPROVED: ownership checks on /users/{id} close the hole.",
]


def reviewer() -> Agent:
    agent = Agent("reviewer", description="Reviews security plans", capabilities=["security.review"])

    @agent.action("run")
    async def review(ctx: Context, params: dict[str, Any]) -> str:
        await anyio.sleep(0.8)  # long enough to watch it happen
        text = str(params.get("text", ""))
        return _REVIEWS[2 if "Fix proposed" in text else 1 if "Endpoints" in text else 0]

    return agent


async def serve_demo_agents(runtime: Runtime, sessions: Sessions, user: str) -> None:
    drafter = stdio_agent(
        "drafter",
        [sys.executable, "-m", "a2a.console.demo_drafter"],
        capabilities=["drafting"],
        description="A local program that drafts messages (the console demo)",
    )
    await runtime.serve(drafter, reviewer())
    policy = SharedCallPolicy(allow_shared_agent_calls=True, allowed_shared_device_ids=["reviewer"])
    await sessions.set_policy(user, "drafter", policy)
    await runtime.wait_for_agents(["drafter", "reviewer"], timeout=15)
