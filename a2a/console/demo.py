"""``a2a console --demo``: a stdio local agent (``drafter``) and a bus agent (``reviewer``)
to run sessions between, with the policy that lets the one send to the other; the servers'
URLs are printed, so that other programs (``a2a watch``, agents of one's own) can join."""

from __future__ import annotations

import sys
from typing import Any

import anyio

from ..core.agent import Agent
from ..core.context import Context
from ..core.runtime import Runtime
from ..sessions import Sessions, SharedCallPolicy
from ..stdio import stdio_agent

__all__ = ["serve_demo_agents", "server_lines"]

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


def server_lines(runtime: Runtime) -> list[str]:
    """``NATS <url>`` and ``Redis <url>`` of ``runtime``, without the credentials they may hold."""
    s = runtime.settings
    lines = ["NATS   " + ",".join(_shown(u) for u in s.nats_url.split(","))]
    if s.redis_url:
        lines.append("Redis  " + _shown(s.redis_url))
    return lines


def _shown(url: str) -> str:
    scheme, sep, rest = url.strip().partition("://")
    netloc, slash, path = rest.partition("/")
    return f"{scheme}{sep}{netloc.rpartition('@')[2]}{slash}{path}" if sep else url


async def serve_demo_agents(runtime: Runtime, sessions: Sessions, user: str) -> None:
    """Serve the demo's agents and allow the drafter to send to the reviewer, and print where
    the servers are (the console prints its own URL once it listens)."""
    for line in server_lines(runtime):
        print(line, flush=True)
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
