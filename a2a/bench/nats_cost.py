"""NATS messages and bytes per call, as nats-server counts them (``/varz``), for the capacity model.

``python -m a2a.bench.nats_cost`` starts its own nats-server (with monitoring) and Redis,
hosts an echo agent in one runtime and calls it from another: by name and by capability,
one call at a time and 64 in flight, with the audit on and off, requests in the full form
(``wire`` 1.3), in the compact one with every field (1.4, ``Settings.peer_protocol``), without
a conversation id that is the call tree's (1.5) and as the default ``auto`` chooses (1.5 to
these agents, which announce it; audit records alike), and an agent taking one call at a time
(each call flips it busy and back). Each line is one case, per call:
messages and bytes into and out of nats-server, and Redis's CPU, FCALLs and PUBLISHes
(the heartbeats state changes bring forward; the background heartbeats of the two
instances are included).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any

import anyio
import redis.asyncio as aioredis

from bus.forms import PeerProtocol
from discovery import AgentCapability

from ..core.agent import Agent
from ..core.context import Context
from ..core.route import by_capability
from ..core.runtime import Runtime
from ..core.settings import Settings
from ..dev.servers import NatsServer, RedisServer, free_port
from .responder import ECHO_CAPABILITY

__all__ = ["main", "measure"]

CALLS = 2000
FIELDS = ("in_msgs", "out_msgs", "in_bytes", "out_bytes")


def _echo(name: str, capacity: int) -> Agent:
    capabilities = [AgentCapability(id=f"{ECHO_CAPABILITY}.{capacity}", proficiency=0.9)]
    agent = Agent(name, capabilities=capabilities, max_concurrency=capacity)

    @agent.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return params

    return agent


async def _call(caller: Runtime, route: Any, limit: anyio.Semaphore) -> None:
    async with limit:
        await caller.call(route, "run", {"text": "x" * 64}, timeout=10)


def _varz(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/varz", timeout=5) as reply:
        data: dict[str, Any] = json.load(reply)
    return data


async def _redis(client: aioredis.Redis) -> dict[str, float]:
    cpu = await client.info("cpu")
    stats = await client.info("commandstats")
    calls = {
        f"redis_{c}": float(stats.get(f"cmdstat_{c}", {"calls": 0})["calls"]) for c in ("fcall", "publish")
    }
    return {"redis_cpu_us": 1e6 * (float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])), **calls}


async def _cases(
    nats_url: str, redis_url: str, monitor: int, audit: bool, wire: PeerProtocol
) -> list[dict[str, Any]]:
    namespace = f"cost{int(audit)}{wire.replace('.', '')}"
    settings = Settings(
        nats_url=nats_url, redis_url=redis_url, namespace=namespace, audit=audit, peer_protocol=wire
    )
    rows = []
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    async with Runtime(settings) as host, Runtime(settings) as caller:
        await host.serve(_echo("echo", 64), _echo("single", 1))
        await caller.wait_for_agents(["echo", "single"], timeout=10)
        cases: list[tuple[int, str, Any]] = [(64, "name", "echo"), (1, "name", "single")]
        cases.append((64, "capability", by_capability(f"{ECHO_CAPABILITY}.64")))
        for capacity, name, route in cases:
            for in_flight in (1, 64) if capacity > 1 else (1,):
                before, redis_before = _varz(monitor), await _redis(client)
                limit = anyio.Semaphore(in_flight)
                async with anyio.create_task_group() as tg:
                    for _ in range(CALLS):
                        tg.start_soon(_call, caller, route, limit)
                await anyio.sleep(0.1)  # the last state change reaches Redis
                after, redis_after = _varz(monitor), await _redis(client)
                per_call = {f: round((after[f] - before[f]) / CALLS, 2) for f in FIELDS}
                per_call |= {f: round((redis_after[f] - redis_before[f]) / CALLS, 2) for f in redis_after}
                row = {
                    "audit": audit,
                    "wire": wire,
                    "route": name,
                    "capacity": capacity,
                    "in_flight": in_flight,
                }
                rows.append(row | per_call)
    await client.aclose()
    return rows


def measure() -> list[dict[str, Any]]:
    """Every case, on servers of its own."""
    monitor = free_port()
    with NatsServer(extra_args=["-m", str(monitor)]) as nats, RedisServer() as redis:
        return [
            row
            for audit in (True, False)
            for wire in ("auto", "1.3", "1.4", "1.5")
            for row in anyio.run(_cases, nats.url, redis.url, monitor, audit, wire)
        ]


def main() -> int:
    for row in measure():
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
