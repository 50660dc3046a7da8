"""What history capture costs per call: ``python -m a2a.bench.capture_cost``.

A caller and an echo agent in one process, on an embedded nats-server and Redis, 64 calls
in flight, each call from outside any agent (so each opens a conversation of its own, as
``a2a bench``'s calls do). Rounds alternate capture on and off (``Settings.history_capture``)
so both see the same machine; each line gives calls per second and the process's CPU per
call (caller and callee together).
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from typing import Any

import anyio

from ..core.runtime import Runtime
from ..core.settings import Settings
from ..dev.servers import NatsServer, RedisServer
from .responder import echo_agent

__all__ = ["main", "measure"]


async def _load(rt: Runtime, calls: int, in_flight: int) -> tuple[float, float]:
    limit = anyio.Semaphore(in_flight)

    async def one() -> None:
        async with limit:
            await rt.call("bench-echo", "echo", {"text": "x" * 64}, timeout=10)

    wall, cpu = time.perf_counter(), time.process_time()
    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(one)
    return calls / (time.perf_counter() - wall), (time.process_time() - cpu) / calls * 1e6


async def measure(rounds: int = 2, calls: int = 10_000, in_flight: int = 64) -> list[dict[str, Any]]:
    """One line per round and setting: capture, calls per second, CPU µs per call."""
    lines = []
    with NatsServer() as nats, RedisServer() as redis:
        for _ in range(rounds):
            for capture in (True, False):
                s = Settings(
                    nats_url=nats.url,
                    redis_url=redis.url,
                    namespace=f"capture{uuid.uuid4().hex[:6]}",
                    open=True,
                    history_capture=capture,
                )
                async with Runtime(s) as callee, Runtime(s) as caller:
                    await callee.serve(echo_agent())
                    await caller.wait_for_agents(["bench-echo"])
                    await _load(caller, calls // 5, in_flight)  # warm up
                    rate, cpu_us = await _load(caller, calls, in_flight)
                lines.append(
                    {"capture": capture, "calls_per_s": round(rate), "cpu_us_per_call": round(cpu_us, 1)}
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=10_000)
    args = parser.parse_args(argv)
    for line in anyio.run(measure, args.rounds, args.calls):
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
