"""The agent the chaos harness serves (``a2a serve a2a.bench.chaos_agent:worker``).

Its one action, ``work``, sleeps a little, performs one journaled side effect (which takes
a moment too), sleeps a little more and returns. Every step leaves a line in a file of its
own process, outside the task store, so the harness can count what really happened
whatever the store says:

    start    an attempt's handler began
    effect   the side effect ran (the only place it runs: inside ``ctx.task.effect``)
    return   the handler returned a result

The files live in the directory named by ``A2A_CHAOS_DIR``, one per process
(``events.<pid>.jsonl``). A line is one ``write`` on a file opened for appending: a
SIGKILL never leaves half a line, and what was written is kept by the kernel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

from ..core.agent import Agent
from ..core.context import Context

__all__ = ["EVENTS_DIR", "read_events", "worker"]

EVENTS_DIR = "A2A_CHAOS_DIR"
"""The environment variable naming the directory the events are written to."""

worker = Agent("chaos-worker", max_concurrency=16, description="the chaos harness's worker")

_fd: int | None = None


def _note(kind: str, ctx: Context, job: int) -> None:
    global _fd
    if _fd is None:
        folder = os.environ.get(EVENTS_DIR)
        if not folder:
            raise RuntimeError(f"{EVENTS_DIR} is not set: the chaos worker has nowhere to count")
        path = Path(folder) / f"events.{os.getpid()}.jsonl"
        _fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    line = {"kind": kind, "task": ctx.task.task_id, "job": job, "attempt": ctx.task.number}
    os.write(_fd, (json.dumps(line) + "\n").encode())


@worker.action("work")
async def _work(ctx: Context, params: dict[str, Any]) -> Any:
    """Sleep ``before`` seconds, run the effect (``during`` seconds, counted halfway) through
    the task's journal, sleep ``after`` seconds, return."""
    job = int(params["job"])
    during = float(params["during"]) / 2
    _note("start", ctx, job)
    await anyio.sleep(float(params["before"]))

    async def count() -> str:
        # An effect takes time, like the call to another system it stands for: a kill
        # before its count leaves it not done, one after leaves it done, both unrecorded.
        await anyio.sleep(during)
        _note("effect", ctx, job)
        await anyio.sleep(during)
        return f"{os.getpid()}/{ctx.task.number}"

    # Unjournaled (``journal`` false) the effect runs again in every attempt: the control
    # that shows a run would catch an effect run twice.
    receipt = await ctx.task.effect("count", count) if params.get("journal", True) else await count()
    await anyio.sleep(float(params["after"]))
    _note("return", ctx, job)
    return {"job": job, "attempt": ctx.task.number, "pid": os.getpid(), "receipt": receipt}


def read_events(folder: Path) -> list[dict[str, Any]]:
    """Every event the worker processes wrote in ``folder`` (a torn last line is skipped)."""
    events: list[dict[str, Any]] = []
    for path in sorted(folder.glob("events.*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events
