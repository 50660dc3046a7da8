"""Seed 000's context-bloat criterion, measured.

A planner, 200 messages into a coding conversation, delegates a task to a coder. We
count the tokens the coder receives (filtered context plus the task) against handing
it the whole history, and the extra tokens delegation costs over a single agent that
reads the history once. Run with ``python -m a2a.bench.context_bloat [--json]``; it uses
NATS_URL / REDIS_URL when set and starts embedded servers otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import msgspec

from bus.handoff import Artifact, ChatMessage, ContextFilter, DelegationResult

from ..core.agent import Agent
from ..core.context import Context
from ..core.runtime import Runtime
from ..core.settings import Settings
from ..dev.servers import NatsServer, RedisServer

__all__ = ["BloatReport", "conversation", "measure"]

TASK = (
    "Implement the user_auth function in src/auth/user.rs: 1. email validation "
    "2. password hashing (bcrypt) 3. return a success/error tuple."
)
FILTER = ContextFilter(
    last_messages=5,
    roles=["user", "assistant"],
    include_workspace=True,
    workspace_files=["src/auth/user.rs", "src/auth/types.rs"],
    max_age_seconds=600,
)
MAX_CONTEXT_TOKENS = 4000  # seed 000's default


class BloatReport(msgspec.Struct, kw_only=True):
    messages: int
    full_history_tokens: int
    received_context_tokens: int
    received_messages: int
    task_tokens: int
    ratio: float
    """Tokens the coder receives / tokens of the whole history."""
    overhead_vs_single_agent: float
    """Tokens the delegation adds / tokens a single agent reads (history + task); seed target < 0.20."""


def conversation(n: int = 200, *, seed: int = 7, now: float | None = None) -> list[ChatMessage]:
    """A deterministic coding session: questions, code-heavy answers, long tool output."""
    rng = random.Random(seed)
    now = time.time() if now is None else now
    code = (
        "fn handler(req: Request) -> Result<Response, Error> {\n"
        "    let body = parse(&req)?;\n    Ok(respond(body))\n}\n"
    )
    log = "test auth::tests::login ... ok\n" * 12 + "warning: unused variable `token`\n" * 4
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            role, content = (
                "user",
                f"Can you look at module {rng.choice(['auth', 'db', 'api'])}? " * rng.randint(1, 4),
            )
        elif kind == 1:
            role, content = "assistant", "Here is the current code:\n" + code * rng.randint(1, 5)
        elif kind == 2:
            role, content = "tool", log * rng.randint(1, 3)
        else:
            role, content = (
                "assistant",
                "I ran the tests; " + "all green, one warning remains. " * rng.randint(2, 8),
            )
        out.append(ChatMessage(role=role, content=content, created_at=now - (n - i) * 20))
    return out


def _agents() -> tuple[Agent, Agent]:
    planner, coder = Agent("bloat-planner"), Agent("bloat-coder")

    @planner.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> Any:
        response = await ctx.delegate(
            "bloat-coder",
            TASK,
            objective="implement user_auth",
            context=FILTER,
            max_context_tokens=MAX_CONTEXT_TOKENS,
            workspace=params["workspace"],
            allowed_tools=["read", "write", "edit"],
        )
        return response.artifacts[0].value

    @coder.action("task")
    async def task(ctx: Context, params: dict[str, Any]) -> DelegationResult:
        d = ctx.request.delegation
        assert d is not None and d.context is not None
        builder = ctx.services.context_builder
        seen = {
            "tokens": d.context.total_tokens,
            "recount": builder.cost(d.context),
            "messages": len(d.context.messages),
            "task_tokens": builder.count(d.task),
        }
        return DelegationResult(summary="measured", artifacts=[Artifact(type="json", value=seen)])

    return planner, coder


async def measure(settings: Settings, messages: int = 200) -> BloatReport:
    """Run the planner/coder delegation on real servers and count the tokens."""
    history = conversation(messages)
    planner, coder = _agents()
    with tempfile.TemporaryDirectory() as workspace:
        (Path(workspace) / "src" / "auth").mkdir(parents=True)
        for name in ("user.rs", "types.rs", "mod.rs"):
            (Path(workspace) / "src" / "auth" / name).write_text("// stub\n")
        async with Runtime(settings) as rt:
            assert rt.history is not None, "the measurement needs the history store (Redis)"
            await rt.serve(planner, coder)
            conv = uuid.uuid4().hex
            await rt.history.append(conv, *history)
            got = await rt.call(
                "bloat-planner", "run", {"workspace": workspace}, conversation_id=conv, timeout=30
            )
            full = rt.context_builder.full_history_cost(history)
    assert got["tokens"] == got["recount"]
    received = got["tokens"] + got["task_tokens"]
    return BloatReport(
        messages=messages,
        full_history_tokens=full,
        received_context_tokens=got["tokens"],
        received_messages=got["messages"],
        task_tokens=got["task_tokens"],
        ratio=round(received / full, 4),
        overhead_vs_single_agent=round(received / (full + got["task_tokens"]), 4),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    with ExitStack() as stack:
        nats_url = os.environ.get("NATS_URL") or stack.enter_context(NatsServer()).url
        redis_url = os.environ.get("REDIS_URL") or stack.enter_context(RedisServer()).url
        settings = Settings(nats_url=nats_url, redis_url=redis_url, namespace=f"bloat-{uuid.uuid4().hex[:6]}")
        report = anyio.run(measure, settings, args.messages)
    if args.json:
        print(json.dumps(msgspec.to_builtins(report)))
        return
    print(f"conversation: {report.messages} messages, {report.full_history_tokens} tokens (whole history)")
    print("tokens counted with a2a.estimate_tokens, the default counter")
    print(
        f"coder receives: {report.received_context_tokens} tokens of context "
        f"({report.received_messages} messages + workspace) + {report.task_tokens} task tokens"
    )
    print(f"ratio received / whole history: {report.ratio:.2%}")
    print(f"overhead vs a single agent: {report.overhead_vs_single_agent:.2%} (seed 000 target: < 20%)")


if __name__ == "__main__":
    main()
