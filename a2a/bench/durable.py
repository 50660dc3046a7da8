"""``a2a bench --durable``: durable tasks against raw nats-py JetStream doing the same work.

Both sides do, per task: publish the request to a work-queue stream with ``Nats-Msg-Id``,
a worker pulls it (``fetch``), stores the result with a KV ``create`` and acknowledges it,
and the submitter learns of the result from the bucket. The runtime adds its envelope, the
task record, the attempt record, the callee's checks, the outcome wrapper and the audit.
Windows alternate raw and runtime after a CPU calibration (as ``a2a bench``); a plain call
to the same agent is measured in the same run, for the latency a task adds over a call.
Everything runs on one embedded nats-server with file storage; submitter and worker are
two connections of this process.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
import nats
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, KeyValueConfig, RetentionPolicy, StreamConfig

from ..core.agent import Agent
from ..core.context import Context
from ..core.runtime import Runtime
from ..core.settings import Settings
from ..dev.servers import NatsServer
from .cpu import process_cpu
from .throughput import DISTURBED, calibrate

__all__ = ["DurableConfig", "run_durable_bench"]

PAYLOAD = {"text": "x" * 64, "n": 1}

echo = Agent("bench-echo", max_concurrency=64)


@echo.action("echo")
async def _echo(ctx: Context, params: dict[str, Any]) -> Any:
    return params


class DurableConfig(msgspec.Struct, kw_only=True):
    tasks: int = 2000
    """Tasks per throughput window."""
    sequential: int = 200
    """Tasks per latency window."""
    concurrency: int = 64
    rounds: int = 10


Submit = Callable[[], Awaitable[None]]


async def _windows(
    cfg: DurableConfig, modes: dict[str, Submit], server_pid: int | None = None
) -> list[dict[str, Any]]:
    """Alternate the modes' windows: throughput with ``concurrency`` in flight (and the CPU
    each task cost this process and the server), then sequential p50."""
    windows: list[dict[str, Any]] = []
    for submit in modes.values():  # a warm-up: connections, consumers and subscriptions made
        for _ in range(cfg.sequential):
            await submit()
    for _ in range(cfg.rounds):
        for mode, submit in modes.items():
            cal = calibrate()
            left = cfg.tasks
            start = time.perf_counter()
            cpu, server_cpu = time.process_time(), process_cpu(server_pid)

            async def flow(submit: Submit = submit) -> None:
                nonlocal left
                while left > 0:
                    left -= 1
                    await submit()

            async with anyio.create_task_group() as tg:
                for _ in range(cfg.concurrency):
                    tg.start_soon(flow)
            rate = cfg.tasks / (time.perf_counter() - start)
            cpu_us = {
                "process": (time.process_time() - cpu) / cfg.tasks * 1e6,
                "server": (process_cpu(server_pid) - server_cpu) / cfg.tasks * 1e6,
            }
            latencies = []
            for _ in range(cfg.sequential):
                t = time.perf_counter()
                await submit()
                latencies.append((time.perf_counter() - t) * 1000)
            p50 = statistics.median(latencies)
            windows.append(
                {"mode": mode, "throughput": rate, "p50_ms": p50, "calibration_ms": cal, "cpu_us": cpu_us}
            )
    typical = statistics.median(w["calibration_ms"] for w in windows)
    for w in windows:
        w["disturbed"] = w["calibration_ms"] > typical * DISTURBED
    return windows


class _Raw:
    """The same work with nats-py alone: stream, pull consumer, KV bucket, a worker loop."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.waiting: dict[str, anyio.Event] = {}

    async def __aenter__(self) -> _Raw:
        self.submitter = await nats.connect(self.url)
        self.worker = await nats.connect(self.url)
        js = self.worker.jetstream()
        await js.add_stream(
            StreamConfig(name="RAWQ", subjects=["rawq.*"], retention=RetentionPolicy.WORK_QUEUE)
        )
        self.kv = await js.create_key_value(KeyValueConfig(bucket="RAWKV", history=1))
        config = ConsumerConfig(durable_name="w", ack_policy=AckPolicy.EXPLICIT, max_ack_pending=-1)
        self.pull = await js.pull_subscribe("rawq.echo", durable="w", stream="RAWQ", config=config)
        self.js = self.submitter.jetstream()
        self.sub = await self.submitter.subscribe("$KV.RAWKV.>", cb=self._stored)
        return self

    async def _stored(self, msg: Any) -> None:
        event = self.waiting.get(msg.subject[len("$KV.RAWKV.") :])
        if event is not None:
            event.set()

    async def work(self) -> None:
        while True:
            try:
                msgs = await self.pull.fetch(64, timeout=1)
            except TimeoutError:  # nats-py raises asyncio.TimeoutError for a batch, its own for one
                continue
            async with anyio.create_task_group() as tg:  # a batch's tasks at once, as the runtime runs them
                for msg in msgs:
                    tg.start_soon(self._done, msg)

    async def _done(self, msg: Any) -> None:
        task_id = msg.headers["Nats-Msg-Id"] if msg.headers else ""
        await self.kv.create(task_id, msg.data)
        await msg.ack()

    async def submit(self) -> None:
        task_id = uuid.uuid4().hex
        event = self.waiting[task_id] = anyio.Event()
        await self.js.publish("rawq.echo", msgspec.json.encode(PAYLOAD), headers={"Nats-Msg-Id": task_id})
        await event.wait()
        del self.waiting[task_id]
        while True:  # the result, as the runtime's waiter reads it (the notice may come first)
            try:
                await self.kv.get(task_id)
                return
            except nats.js.errors.KeyNotFoundError:
                await anyio.sleep(0.001)

    async def __aexit__(self, *exc: object) -> None:
        await self.sub.unsubscribe()
        await self.submitter.close()
        await self.worker.close()


async def _bench(url: str, cfg: DurableConfig, server_pid: int | None = None) -> dict[str, Any]:
    settings = Settings(nats_url=url, redis_url=None, namespace="bench", tasks=True, audit=True)
    async with _Raw(url) as raw, Runtime(settings) as host, Runtime(settings) as client:
        await host.serve(echo)
        async with anyio.create_task_group() as tg:
            tg.start_soon(raw.work)

            async def task() -> None:
                submitted = await client.tasks.submit("bench-echo", "echo", PAYLOAD, timeout=60)
                await submitted.result()

            async def call() -> None:
                await client.call("bench-echo", "echo", PAYLOAD, timeout=60)

            modes: dict[str, Submit] = {"raw": raw.submit, "durable": task, "call": call}
            windows = await _windows(cfg, modes, server_pid)
            tg.cancel_scope.cancel()
    return _summary(windows)


def _summary(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the undisturbed windows; the ratio is the median of each round's own: its
    durable window against its raw window, each scaled by its CPU calibration (this machine's
    speed swings by half between windows, both modes alike)."""
    kept = [w for w in windows if not w["disturbed"]] or windows

    def median(mode: str, kind: str) -> float:
        return float(statistics.median(w[kind] for w in kept if w["mode"] == mode))

    throughput = {m: round(median(m, "throughput"), 1) for m in ("raw", "durable", "call")}
    p50 = {m: round(median(m, "p50_ms"), 3) for m in ("raw", "durable", "call")}
    raw = [w for w in windows if w["mode"] == "raw"]
    durable = [w for w in windows if w["mode"] == "durable"]
    rounds = [
        d["throughput"] * d["calibration_ms"] / (r["throughput"] * r["calibration_ms"])
        for r, d in zip(raw, durable, strict=True)
    ]
    cpu = {
        m: {
            part: round(statistics.median(w["cpu_us"][part] for w in kept if w["mode"] == m), 1)
            for part in ("process", "server")
        }
        for m in ("raw", "durable")
    }
    return {
        "throughput": throughput,
        "p50_ms": p50,
        "cpu_us_per_task": cpu,
        "ratio": round(statistics.median(rounds), 3),
        "ratio_range": [round(min(rounds), 3), round(max(rounds), 3)],
        "added_p50_ms_over_call": round(p50["durable"] - p50["call"], 3),
        "windows": windows,
    }


def run_durable_bench(nats_url: str | None = None, config: DurableConfig | None = None) -> dict[str, Any]:
    """Run the benchmark on ``nats_url`` (its JetStream) or an embedded nats-server."""
    cfg = config or DurableConfig()
    if nats_url:
        return anyio.run(_bench, nats_url, cfg)
    with NatsServer() as server:
        return anyio.run(_bench, server.url, cfg, server.pid)


def render(report: dict[str, Any]) -> str:
    t, p = report["throughput"], report["p50_ms"]
    low, high = report["ratio_range"]
    c = report["cpu_us_per_task"]
    raw_cpu, durable_cpu = ((c[m]["process"], c[m]["server"]) for m in ("raw", "durable"))
    return "\n".join(
        [
            "durable tasks: submit -> result, 64 in flight and sequential, one nats-server (file store)",
            f"  raw nats-py JetStream  {t['raw']:9.1f} tasks/s   p50 {p['raw']:.3f} ms",
            f"  a2a durable task       {t['durable']:9.1f} tasks/s   p50 {p['durable']:.3f} ms",
            f"  a2a plain call         {t['call']:9.1f} calls/s   p50 {p['call']:.3f} ms",
            f"  ratio {report['ratio']:.3f} of raw (median of {len(report['windows']) // 3} rounds,"
            f" each calibrated; range {low:.3f}-{high:.3f})",
            f"  a task adds {report['added_p50_ms_over_call']:.3f} ms (p50) over a call",
            f"  CPU per task: raw {raw_cpu[0]:.0f} µs here + {raw_cpu[1]:.0f} µs nats-server;"
            f" durable {durable_cpu[0]:.0f} + {durable_cpu[1]:.0f} µs"
            f" (raw/durable {sum(raw_cpu) / max(1e-9, sum(durable_cpu)):.3f})",
        ]
    )
