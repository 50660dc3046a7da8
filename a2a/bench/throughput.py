"""``a2a bench``: the runtime against raw nats-py and redis-py, measured in the same run.

Windows of raw and runtime calls alternate, each preceded by a short CPU calibration;
a window whose calibration ran more than 30% slower than the median was disturbed by
something else on the machine and is left out of the figures (and reported). Only
ratios measured this way mean something on a shared machine.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import ExitStack, suppress
from typing import Any

import anyio
import msgspec
import nats
import redis.asyncio as aioredis

from bus.errors import A2AError
from discovery import AgentCapability, AgentProfile, Registry

from ..core.route import by_capability
from ..core.runtime import Runtime
from ..core.settings import Settings
from ..dev.servers import NatsServer, RedisServer
from ..processes import die_with_parent
from .cpu import process_cpu
from .floor import envelope_subject, floor_call
from .responder import ECHO_CAPABILITY, raw_subject

__all__ = ["DISTURBED", "MODES", "PROCESSES", "BenchConfig", "BenchReport", "calibrate", "run_bench"]

PAYLOAD = {"text": "x" * 64, "n": 1}
PROCESSES = ("caller", "callee", "nats-server")
"""The processes whose CPU each throughput window measures: this one, the responder
process (the raw responder and the echo agents), and the embedded nats-server (0 when
the bench uses a server it did not start)."""
SETTLE = 0.3
"""Seconds a throughput window waits after its last call before it reads the processes' CPU."""
MODES = {
    "raw": "raw nats-py request",
    "envelope": "raw nats-py, envelope decoded and encoded",
    "name": "runtime, by name",
    "capability": "runtime, by capability",
    "name_unaudited": "runtime, by name, audit off",
    "name_bare": "runtime, by name, audit and capture off",
    "name_audited": "runtime, by name, audit on, capture off",
}
DISTURBED = 1.3
"""A window whose CPU calibration ran this much slower than the median was disturbed."""


class BenchConfig(msgspec.Struct, kw_only=True):
    calls: int = 5000
    """Calls per throughput window."""
    sequential: int = 1000
    """Calls per latency window."""
    concurrency: int = 64
    rounds: int = 3
    memory_calls: int = 100_000
    registry_sizes: tuple[int, ...] = (10, 1_000, 10_000)
    registry_lookups: int = 500


class Window(msgspec.Struct):
    mode: str
    kind: str
    value: float
    calibration_ms: float
    disturbed: bool = False
    cpu_us: dict[str, float] = msgspec.field(default_factory=dict)
    """Throughput windows: CPU per call of each process (``PROCESSES``), from ``/proc``."""


class BenchReport(msgspec.Struct, kw_only=True):
    loop: str
    throughput: dict[str, float]
    """Calls per second with ``concurrency`` in flight (median of undisturbed windows)."""
    latency_p50_us: dict[str, float]
    latency_p99_us: dict[str, float]
    ratios: dict[str, float]
    added_p50_us: dict[str, float]
    cpu_us: dict[str, dict[str, float]]
    """Mode -> process (``PROCESSES``) -> CPU µs per call, median of the undisturbed windows."""
    find_best_us: dict[str, dict[str, float]]
    """Registry size -> p50/p99 of the Redis search (one round trip) and of the local view."""
    memory: dict[str, float]
    windows: list[Window]
    targets: dict[str, bool]


def calibrate() -> float:
    """Milliseconds for a fixed amount of pure-Python work: the machine's speed right now."""
    start = time.perf_counter()
    total = 0
    for i in range(200_000):
        total += i * i % 7
    return (time.perf_counter() - start) * 1000


def rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _throughput(
    call: Callable[[], Awaitable[Any]],
    calls: int,
    concurrency: int,
    pids: tuple[int | None, int | None] = (None, None),
) -> tuple[float, dict[str, float]]:
    """Calls per second with ``concurrency`` in flight, and the CPU per call of this process
    and of the processes ``pids`` (the callee's and nats-server's)."""
    per_worker = calls // concurrency

    async def worker() -> None:
        for _ in range(per_worker):
            await call()

    before = (time.process_time(), *(process_cpu(pid) for pid in pids))
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    elapsed = time.perf_counter() - start
    if any(pids):
        # What the window's calls left the callee to do in the background (its history
        # writes, its audit batch) is theirs too: let it finish before reading the CPU.
        await anyio.sleep(SETTLE)
    after = (time.process_time(), *(process_cpu(pid) for pid in pids))
    done = per_worker * concurrency
    cpu = {name: round((b - a) / done * 1e6, 1) for name, a, b in zip(PROCESSES, before, after, strict=True)}
    return done / elapsed, cpu


async def _latencies(call: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        out.append((time.perf_counter() - start) * 1e6)
    return out


async def _measure(
    settings: Settings, config: BenchConfig, loop_name: str, pids: tuple[int | None, int | None]
) -> BenchReport:
    namespace = settings.namespace
    nc = await nats.connect(settings.nats_url)
    raw_payload = msgspec.json.encode(PAYLOAD)
    subject, envelope_at = raw_subject(namespace), envelope_subject(namespace)
    async with Runtime(settings) as rt:
        agents = ["bench-echo", "bench-echo-unaudited", "bench-echo-bare", "bench-echo-audited"]
        await rt.wait_for_agents(agents, timeout=30)

        async def raw() -> Any:
            return await nc.request(subject, raw_payload, timeout=10)

        async def envelope() -> Any:  # the floor: an envelope each way, nothing checked
            return await floor_call(nc, envelope_at, settings.client_name, PAYLOAD)

        async def by_name() -> Any:
            return await rt.call("bench-echo", "echo", PAYLOAD, timeout=10)

        route = by_capability(ECHO_CAPABILITY)

        async def by_cap() -> Any:
            return await rt.call(route, "echo", PAYLOAD, timeout=10)

        async def unaudited() -> Any:
            return await rt.call("bench-echo-unaudited", "echo", PAYLOAD, timeout=10)

        async def bare() -> Any:
            return await rt.call("bench-echo-bare", "echo", PAYLOAD, timeout=10)

        async def audited() -> Any:
            return await rt.call("bench-echo-audited", "echo", PAYLOAD, timeout=10)

        modes = {
            "raw": raw,
            "envelope": envelope,
            "name": by_name,
            "capability": by_cap,
            "name_unaudited": unaudited,
            "name_bare": bare,
            "name_audited": audited,
        }
        for call in modes.values():  # warm up connections, caches and the JIT-less interpreter alike
            await _throughput(call, 500, config.concurrency)
        windows: list[Window] = []
        for _ in range(config.rounds):
            for mode, call in modes.items():
                cal = calibrate()
                rate, cpu = await _throughput(call, config.calls, config.concurrency, pids)
                windows.append(Window(mode, "throughput", rate, cal, cpu_us=cpu))
                cal = calibrate()
                lat = await _latencies(call, config.sequential)
                windows.append(Window(mode, "p50", percentile(lat, 0.5), cal))
                windows.append(Window(mode, "p99", percentile(lat, 0.99), cal))
        median_cal = statistics.median(w.calibration_ms for w in windows)
        for w in windows:
            w.disturbed = w.calibration_ms > DISTURBED * median_cal

        def kept(mode: str, kind: str) -> list[Window]:
            """The mode's windows of this kind: the undisturbed ones, or all when none is."""
            found = [w for w in windows if w.mode == mode and w.kind == kind]
            return [w for w in found if not w.disturbed] or found

        def figure(mode: str, kind: str) -> float:
            return statistics.median(w.value for w in kept(mode, kind))

        def cpu_of(mode: str, process: str) -> float:
            return round(statistics.median(w.cpu_us[process] for w in kept(mode, "throughput")), 1)

        throughput = {m: round(figure(m, "throughput"), 1) for m in modes}
        p50 = {m: round(figure(m, "p50"), 1) for m in modes}
        p99 = {m: round(figure(m, "p99"), 1) for m in modes}
        cpu_us = {m: {p: cpu_of(m, p) for p in PROCESSES} for m in modes}
        runtime_modes = ("envelope", "name", "capability", "name_unaudited", "name_bare", "name_audited")
        ratios = {m: round(throughput[m] / throughput["raw"], 3) for m in runtime_modes}
        added = {m: round(p50[m] - p50["raw"], 1) for m in runtime_modes}

        # Pending futures and memory across many calls, timeouts included.
        gc.collect()
        before = rss_mb()
        pending_before = len(rt.bus.pending)
        await _throughput(by_name, config.memory_calls, config.concurrency)
        for _ in range(200):  # calls that time out: their pending entries must go too
            with anyio.move_on_after(5), suppress(A2AError):  # NO_RESPONDERS or DEADLINE_EXCEEDED
                await rt.call("bench-nobody", "x", timeout=0.001)
        gc.collect()
        after = rss_mb()
        memory = {
            "calls": float(config.memory_calls),
            "rss_before_mb": round(before, 1),
            "rss_after_mb": round(after, 1),
            "rss_growth_mb": round(after - before, 1),
            "pending_before": float(pending_before),
            "pending_after": float(len(rt.bus.pending)),
            "late_replies": float(rt.bus.pending.late_replies),
        }
    await nc.close()
    find_best = await _registry_bench(settings, config)
    raw_cpu = cpu_us["raw"]
    targets = {
        "name >= 1.0x raw throughput": ratios["name"] >= 1.0,
        "capability >= 0.70x raw throughput": ratios["capability"] >= 0.70,
        "added p50 <= 100 us": added["name"] <= 100,
        "callee CPU <= 1.5x raw's (audit on, capture off)": cpu_us["name_audited"]["callee"]
        <= 1.5 * raw_cpu["callee"],
        "callee CPU <= 1.2x raw's (audit and capture off)": cpu_us["name_bare"]["callee"]
        <= 1.2 * raw_cpu["callee"],
        "caller CPU <= raw's": cpu_us["name"]["caller"] <= raw_cpu["caller"],
        "find_best p50 <= 1 ms at 10,000": find_best.get("10000", {}).get("redis_p50", 1e9) <= 1000,
        "0 pending futures": memory["pending_after"] == 0,
        "memory flat (< 20 MB growth)": memory["rss_growth_mb"] < 20,
    }
    return BenchReport(
        loop=loop_name,
        throughput=throughput,
        latency_p50_us=p50,
        latency_p99_us=p99,
        ratios=ratios,
        added_p50_us=added,
        cpu_us=cpu_us,
        find_best_us=find_best,
        memory=memory,
        windows=windows,
        targets=targets,
    )


async def _registry_bench(settings: Settings, config: BenchConfig) -> dict[str, dict[str, float]]:
    """find_best_agent over registries of growing size: the Redis script, and the local view."""
    from discovery import LocalView

    out: dict[str, dict[str, float]] = {}
    client = aioredis.Redis.from_url(settings.redis_url or "", decode_responses=True)
    try:
        for size in config.registry_sizes:
            registry = Registry(client, namespace=f"{settings.namespace}-r{size}", heartbeat_interval=600)
            await registry.register_many(
                [
                    AgentProfile(
                        agent_id=f"worker-{size}x{i}",
                        name="worker",
                        capabilities=[
                            AgentCapability(id="bench.cap", proficiency=_spread(i)),
                            AgentCapability(id=f"other.{i % 20}", proficiency=0.5),
                        ],
                        capacity=8,
                    )
                    for i in range(size)
                ]
            )
            await registry.find_best_agent(["bench.cap"])  # load the script
            redis_us = []
            for _ in range(config.registry_lookups):
                start = time.perf_counter()
                await registry.find_best_agent(["bench.cap"])
                redis_us.append((time.perf_counter() - start) * 1e6)
            view = LocalView(registry)
            view.replace_all(await registry.list_agents())
            view.connected = True
            local_us = []
            for _ in range(config.registry_lookups):
                start = time.perf_counter()
                view.best(["bench.cap"])
                local_us.append((time.perf_counter() - start) * 1e6)
            out[str(size)] = {
                "redis_p50": round(percentile(redis_us, 0.5), 1),
                "redis_p99": round(percentile(redis_us, 0.99), 1),
                "view_p50": round(percentile(local_us, 0.5), 1),
                "view_p99": round(percentile(local_us, 0.99), 1),
            }
            await client.delete(*[k async for k in client.scan_iter(registry.keys.prefix + "*", count=5000)])
    finally:
        await client.aclose()
    return out


def _spread(i: int) -> float:
    """A deterministic proficiency in [0.5, 1.0) for the i-th benchmark instance."""
    return round(0.5 + (i * 7919 % 500) / 1000, 3)


def run_bench(
    *,
    nats_url: str | None,
    redis_url: str | None,
    loop: str,
    config: BenchConfig,
) -> BenchReport:
    """Start servers if needed and the responder process, then measure on one event loop."""
    namespace = f"bench{uuid.uuid4().hex[:6]}"
    with ExitStack() as stack:
        server = None
        if not nats_url:
            server = stack.enter_context(NatsServer())
            nats_url = server.url
        redis_url = redis_url or stack.enter_context(RedisServer()).url
        responder = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "a2a.bench.responder",
                "--nats-url",
                nats_url,
                "--redis-url",
                redis_url,
                "--namespace",
                namespace,
                "--loop",
                loop,
            ],
            stdout=subprocess.PIPE,
            env={**os.environ, "OTEL_SDK_DISABLED": "true"},
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
        stack.callback(_stop, responder)
        assert responder.stdout is not None
        if responder.stdout.readline().strip() != b"ready":
            raise RuntimeError("the bench responder did not start")
        settings = Settings(nats_url=nats_url, redis_url=redis_url, namespace=namespace)
        options = {"use_uvloop": loop == "uvloop"}
        pids = (responder.pid, server.pid if server is not None else None)
        return anyio.run(_measure, settings, config, loop, pids, backend="asyncio", backend_options=options)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
