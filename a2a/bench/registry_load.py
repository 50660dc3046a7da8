"""``a2a bench --registry``: what a registry of N heartbeating instances costs one local view, and Redis.

N instances (1,000 / 10,000 / 50,000 by default) heartbeat once a second, pipelined from
this process through the registry's own API, as a fleet of runtimes would send them. One
:class:`discovery.LocalView` follows the registry in a process of its own, so its CPU and
memory are its alone. Two views follow it, each in a process of its own: one follows the
whole registry (the namespace's channel, as every view did), the other only the
capability ``FOLLOWED`` (its channel, as a runtime's view follows what it routes to; half
the instances offer it). Phases per size: steady (nothing changes), churn (1% of the
instances change load by half their capacity each second), and three busy phases: 500
instances of capacity 1 each take calls longer than the runtime's 20 ms coalescing delay,
so each flips busy and back on every call; their runtimes write each flip
(``busy-each``, as every state change used to be written) or at most ``STATE_WRITES``
times per heartbeat interval (``busy-coalesced``, as :class:`a2a.core.presence.Presence`
writes them), at several call rates: calls of 300 ms twice a second, of 100 ms five
times a second (``-fast``) and of 50 ms ten times a second (``-faster``). Per phase:

* the messages per second each view received, and its share of one core;
* the view's memory per instance (RSS grown while loading the registry, over N);
* Redis's share of one core and its CPU per heartbeat (``INFO cpu``: so heartbeats one
  Redis core can take), and its memory per instance (``used_memory`` grown while
  registering, over N);
* the round trip of a pipelined batch of 1,000 heartbeats, and of one heartbeat, beside
  redis-py's raw PING round trip measured in the same seconds (their ratio).

The file runs by path as well (``python a2a/bench/registry_load.py``), importing only
``discovery`` and the embedded servers, so the same benchmark measures another checkout
of the registry (``PYTHONPATH=<checkout> python a2a/bench/registry_load.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from contextlib import ExitStack
from typing import Any

import anyio
import redis.asyncio as aioredis

from discovery import AgentCapability, AgentProfile, InstanceState, LocalView, Registry

__all__ = ["main", "run_registry_bench"]

BATCH = 1000
"""Heartbeats per pipelined round trip."""
STATE_WRITES = 2
"""State writes per heartbeat interval and instance at most (``a2a.core.presence.STATE_WRITES``)."""
BUSY = 500
"""Instances of the busy phases (or all, when fewer)."""
RATES = {"": (0.3, 0.5), "-fast": (0.1, 0.2), "-faster": (0.05, 0.1)}
"""Busy phase suffix -> (seconds a call is held, seconds between calls' starts)."""
CAPS = ("code.python", "code.review", "text.summarise", "data.sql", "plan.tasks", "web.search")
BUSY_PHASES = (
    ("coalesced", ""),
    ("coalesced", "-fast"),
    ("coalesced", "-faster"),
    ("each", ""),
    ("each", "-fast"),
)
"""(how state changes are written, call rate) of the busy phases; those writing each flip last,
since a view that falls behind them would still be reading their events in the next phase."""
FOLLOWED = CAPS[0]
"""The capability the second view follows (half the instances offer it)."""


def _profile(ns: str, i: int) -> AgentProfile:
    caps = [
        AgentCapability(id=CAPS[(i + k) % len(CAPS)], proficiency=round(0.5 + (i * 7919 + k) % 500 / 1000, 3))
        for k in range(3)
    ]
    return AgentProfile(
        agent_id=f"worker-{i:08x}", name="worker", description="a benchmark worker", capabilities=caps
    )


# -- the view's process ---------------------------------------------------------------


async def _follow(redis_url: str, namespace: str, seconds: float, capability: str | None) -> None:
    """Follow the registry (or only ``capability``) for ``seconds``, printing one JSON line of
    counters every second."""
    registry = Registry.from_url(redis_url, namespace=namespace)
    view = LocalView(registry, follow="all" if capability is None else "used")
    rss_before = _rss_kb()
    async with anyio.create_task_group() as tg:
        await tg.start(view.run)
        await view.ready.wait()
        if capability is not None:
            await view.follow([capability])
        _say(kind="ready", rss_kb=_rss_kb(), rss_before_kb=rss_before, entries=view.size())
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await anyio.sleep(1.0)
            _say(
                kind="tick",
                cpu=time.process_time(),
                t=time.monotonic(),
                rss_kb=_rss_kb(),
                entries=view.size(),
                resyncs=view.resyncs,
                heard=view.heard,
            )
        tg.cancel_scope.cancel()
    await registry.aclose()


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


# -- the driver -----------------------------------------------------------------------


class _View:
    """The view's process, and the lines it prints, read by a thread as they come."""

    def __init__(self, redis_url: str, namespace: str, seconds: float, capability: str | None = None) -> None:
        command = [sys.executable, __file__, "--view", "--redis-url", redis_url, "--namespace", namespace]
        command += ["--follow", capability] if capability else []
        self.proc = subprocess.Popen([*command, "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True)
        self.lines: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    async def line(self, kind: str, after: float = 0.0, timeout: float = 120.0) -> dict[str, Any]:
        """The first line of ``kind`` printed at or after monotonic time ``after``."""
        with anyio.fail_after(timeout):
            while True:
                for data in self.lines:
                    if data["kind"] == kind and data.get("t", after) >= after:
                        return data
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the view process ended (exit {self.proc.returncode})")
                await anyio.sleep(0.05)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


async def _redis_cpu(client: aioredis.Redis) -> tuple[float, int]:
    """Redis's CPU seconds so far, and its PUBLISH calls (commandstats: each event is published
    on the namespace's channel and on those of its instance's capabilities and agent)."""
    cpu = await client.info("cpu")
    stats = await client.info("commandstats")
    published = int(stats.get("cmdstat_publish", {"calls": 0})["calls"])
    cpu_s = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
    return cpu_s, published


class _Fleet:
    """``n`` instances heartbeating once a second, in pipelined batches, until cancelled."""

    def __init__(self, registry: Registry, n: int) -> None:
        self.registry = registry
        self.n = n
        self.churn = 0.0
        self.loads = [0] * n
        self.beats = 0
        self.registered = 0
        self.lost = 0
        """Instances found expired (a beat more than a ttl late) and registered again."""
        """Instances registered so far: the fleet beats those while the rest register."""
        self.batch_ms: list[float] = []
        self.busy: str | None = None
        """``each`` or ``coalesced`` while the first BUSY instances take calls (capacity 1)."""
        self.rate = RATES[""]
        self.busy_writes = 0

    def state(self, i: int, now: float) -> InstanceState:
        """Instance ``i``'s state now: a busy one holds a call for ``rate[0]`` of every ``rate[1]`` s."""
        if self.busy is None or i >= BUSY:
            return InstanceState(f"worker-{i:08x}", "available", self.loads[i], 4)
        call_s, period_s = self.rate
        held = (now + i * period_s / BUSY) % period_s < call_s
        return InstanceState(f"worker-{i:08x}", "busy" if held else "available", int(held), 1)

    async def flips(self) -> None:
        """Write the busy instances' state changes, every 20 ms as each flip was written, or at
        most STATE_WRITES per interval per instance (the latest state), until cancelled."""
        written: dict[int, tuple[str, float]] = {}
        while True:
            await anyio.sleep(0.02)
            if self.busy is None:
                written.clear()
                continue
            now = time.monotonic()
            window = 0.02 if self.busy == "each" else 1.0 / STATE_WRITES
            due = []
            for i in range(min(BUSY, self.registered)):
                state = self.state(i, now)
                last = written.get(i)
                if (last is None or last[0] != state.status) and (last is None or now - last[1] >= window):
                    due.append(state)
                    written[i] = (state.status, now)
            if due:
                await self.registry.heartbeat(due)
                self.busy_writes += len(due)

    async def run(self) -> None:
        tick = time.monotonic()
        while True:
            n = self.registered
            for i in random.sample(range(n), int(n * self.churn)):
                self.loads[i] = 0 if self.loads[i] else 2  # half of capacity 4: past the hysteresis step
            now = time.monotonic()
            for start in range(0, n, BATCH):
                states = [self.state(i, now) for i in range(start, min(n, start + BATCH))]
                began = time.perf_counter()
                missing = await self.registry.heartbeat(states)
                self.batch_ms.append((time.perf_counter() - began) * 1000)
                self.beats += len(states)
                if missing:  # expired while the fleet fell behind: re-registered, as a runtime does
                    self.lost += len(missing)
                    await self.registry.register_many([_profile("", int(i[7:], 16)) for i in missing])
            tick += 1.0
            await anyio.sleep(max(0.0, tick - time.monotonic()))


async def _phase(fleet: _Fleet, client: aioredis.Redis, views: list[_View], seconds: int) -> dict[str, Any]:
    """What ``seconds`` of the fleet's heartbeats cost the views and Redis (the whole registry's
    view first, then the one following ``FOLLOWED``)."""
    firsts = [await view.line("tick", after=time.monotonic()) for view in views]
    cpu0, published0 = await _redis_cpu(client)
    t0, beats0, batches0, lost0 = time.monotonic(), fleet.beats, len(fleet.batch_ms), fleet.lost
    one_ms: list[float] = []
    ping_ms: list[float] = []
    while time.monotonic() < t0 + seconds:
        began = time.perf_counter()
        await fleet.registry.heartbeat([fleet.state(0, time.monotonic())])
        one_ms.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        await client.ping()
        ping_ms.append((time.perf_counter() - began) * 1000)
        await anyio.sleep(0.1)
    wall = time.monotonic() - t0
    cpu1, published1 = await _redis_cpu(client)
    lasts = [await view.line("tick", after=time.monotonic()) for view in views]
    batch_ms = sorted(fleet.batch_ms[batches0:]) or [0.0]
    one, ping = statistics.median(one_ms), statistics.median(ping_ms)
    result: dict[str, Any] = {}
    for prefix, first, last in zip(("view", "used_view"), firsts, lasts, strict=False):
        view_wall = last["t"] - first["t"]
        result[f"{prefix}_events_per_s"] = round((last["heard"] - first["heard"]) / view_wall, 1)
        result[f"{prefix}_cpu_pct"] = round(100 * (last["cpu"] - first["cpu"]) / view_wall, 2)
    return result | {
        "redis_publishes_per_s": round((published1 - published0) / wall, 1),
        "redis_cpu_pct": round(100 * (cpu1 - cpu0) / wall, 1),
        "redis_cpu_us_per_heartbeat": round(1e6 * (cpu1 - cpu0) / max(1, fleet.beats - beats0), 2),
        "heartbeats_per_s": round((fleet.beats - beats0) / wall),
        "reregistered": fleet.lost - lost0,
        "batch_ms_p50": round(statistics.median(batch_ms), 2),
        "batch_ms_p99": round(batch_ms[math.ceil(0.99 * len(batch_ms)) - 1], 2),
        "one_ms_p50": round(one, 3),
        "ping_ms_p50": round(ping, 3),
        "one_vs_ping": round(one / ping, 2),
    }


async def _size(redis_url: str, n: int, seconds: int, churn: float) -> dict[str, Any]:
    namespace = f"rbench{uuid.uuid4().hex[:6]}"
    # Expiry after 10 missed beats, not 3: registering 50,000 instances keeps a 2-core machine
    # busy enough to delay some beats, and costs at steady state do not depend on it.
    registry = Registry.from_url(redis_url, namespace=namespace, heartbeat_interval=1.0, missed_heartbeats=10)
    client = registry.redis  # on a Redis Cluster: the master of the namespace's slot
    fleet = _Fleet(registry, n)
    views: list[_View] = []
    try:
        memory = int((await client.info("memory"))["used_memory"])
        async with anyio.create_task_group() as tg:
            tg.start_soon(fleet.run)
            started = time.monotonic()
            for start in range(0, n, BATCH):
                end = min(n, start + BATCH)
                began = time.monotonic()
                await registry.register_many([_profile(namespace, i) for i in range(start, end)])
                fleet.registered = end
                await anyio.sleep(time.monotonic() - began)  # half the loop's time left to the heartbeats
            result: dict[str, Any] = {"instances": n, "register_s": round(time.monotonic() - started, 1)}
            grown = int((await client.info("memory"))["used_memory"]) - memory
            result["redis_bytes_per_instance"] = round(grown / n)
            for capability in (None, FOLLOWED):
                views.append(_View(redis_url, namespace, 6 * seconds + 90, capability))
                ready = await views[-1].line("ready")
                prefix = "view" if capability is None else "used_view"
                result[f"{prefix}_entries"] = ready["entries"]
                grown = ready["rss_kb"] - ready["rss_before_kb"]
                result[f"{prefix}_kb_per_instance"] = round(grown / max(1, ready["entries"]), 2)
            await anyio.sleep(2.0)  # past the snapshots' own reads
            result["steady"] = await _phase(fleet, client, views, seconds)
            fleet.churn = churn
            result["churn"] = await _phase(fleet, client, views, seconds)
            fleet.churn = 0.0
            tg.start_soon(fleet.flips)
            for policy, rate in BUSY_PHASES:
                fleet.busy, fleet.rate, writes = policy, RATES[rate], fleet.busy_writes
                await anyio.sleep(3.0)  # the previous phase's writes settle
                phase = result[f"busy-{policy}{rate}"] = await _phase(fleet, client, views, seconds)
                phase["state_writes_per_s"] = round((fleet.busy_writes - writes) / (seconds + 3))
                phase["calls_per_s"] = round(min(BUSY, n) / fleet.rate[1])
            result["view_rss_mb"] = round(views[0].lines[-1]["rss_kb"] / 1024, 1)
            tg.cancel_scope.cancel()
        return result
    finally:
        for view in views:
            view.close()
        keys = [k async for k in client.scan_iter(f"a2a:{{{namespace}}}:*", count=5000)]
        for i in range(0, len(keys), 5000):
            await client.delete(*keys[i : i + 5000])
        await registry.aclose()


def run_registry_bench(
    *, redis_url: str | None, sizes: tuple[int, ...], seconds: int = 10, churn: float = 0.01
) -> list[dict[str, Any]]:
    """Measure each size in turn on the Redis at ``redis_url`` (an embedded one when None)."""
    from a2a.dev.servers import RedisServer

    with ExitStack() as stack:
        url = redis_url or stack.enter_context(RedisServer()).url
        return [anyio.run(_size, url, n, seconds, churn) for n in sizes]


def render(results: list[dict[str, Any]]) -> str:
    """A Markdown table, one row per size and phase."""
    head = (
        "| instances | phase | calls/s | view (all) events/s | view (all) CPU % | view (one capability) "
        "events/s | view (one capability) CPU % | view KB/instance | Redis CPU % "
        "| Redis CPU µs/heartbeat | Redis bytes/instance | heartbeats/s | batch of 1k p50/p99 ms "
        "| one heartbeat / PING ms |"
    )
    rows = [head, "|" + "---|" * 14]
    for r in results:
        for phase in ("steady", "churn", *sorted(f"busy-{policy}{rate}" for policy, rate in BUSY_PHASES)):
            if phase not in r:
                continue
            p = r[phase]
            rows.append(
                f"| {r['instances']:,} | {phase} | {p.get('calls_per_s', 0):,} | {p['view_events_per_s']:,} "
                f"| {p['view_cpu_pct']} | {p.get('used_view_events_per_s', '-')} "
                f"| {p.get('used_view_cpu_pct', '-')} "
                f"| {r['view_kb_per_instance']} | {p['redis_cpu_pct']} | {p['redis_cpu_us_per_heartbeat']} "
                f"| {r.get('redis_bytes_per_instance', '-')} | {p['heartbeats_per_s']:,} "
                f"| {p['batch_ms_p50']} / {p['batch_ms_p99']} | {p['one_ms_p50']} / {p['ping_ms_p50']} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--redis-url")
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--seconds", type=int, default=10, help="seconds per phase")
    parser.add_argument(
        "--churn", type=float, default=0.01, help="share of instances changing load each second"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--view", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    parser.add_argument("--follow", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.view:
        anyio.run(_follow, args.redis_url, args.namespace, float(args.seconds), args.follow)
        return 0
    sizes = tuple(int(s) for s in args.sizes.split(","))
    results = run_registry_bench(
        redis_url=args.redis_url, sizes=sizes, seconds=args.seconds, churn=args.churn
    )
    print(json.dumps(results) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
