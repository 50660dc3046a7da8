"""``a2a bench --gateway``: the A2A gateway against the official SDK's own server, in one run.

Both serve an echo agent over A2A 1.0 JSON-RPC: the gateway (``a2a gateway``, one process)
forwards each ``SendMessage`` over NATS to an echo bus agent (``a2a serve``, another
process) and keeps the task in Redis; the SDK server (a2a-sdk with its in-memory task store,
one process, from its own virtual environment) answers in-process with an echo executor.
The same load generator (keep-alive HTTP/1.1 connections) drives both, in alternating
windows, each after a short CPU calibration; disturbed windows are left out, as in
``a2a bench``. The SDK server script is
``tests/interop/sdk/echo_server.py``, so the benchmark runs from a source checkout.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from ..core.agent import Agent
from ..dev.sdk_env import ensure_sdk_python
from ..dev.servers import NatsServer, RedisServer
from ..processes import die_with_parent
from .responder import echo_agent
from .throughput import DISTURBED, calibrate, percentile

__all__ = ["ECHO", "GatewayReport", "run_gateway_bench"]

ECHO: Agent = echo_agent("gw-echo")
"""The bus agent the gateway serves (``a2a serve a2a.bench.gateway:ECHO``)."""

_SDK_SERVER = Path(__file__).resolve().parents[2] / "tests" / "interop" / "sdk" / "echo_server.py"


class GatewayReport(msgspec.Struct, kw_only=True):
    throughput: dict[str, float]
    """SendMessage calls per second with ``concurrency`` in flight (median of undisturbed windows)."""
    latency_p50_ms: dict[str, float]
    ratio_throughput: float
    """Gateway over SDK server."""
    ratio_p50: float
    """Gateway p50 over SDK server p50 (above 1: the gateway is slower)."""
    windows: list[dict[str, Any]]


def _body(n: int) -> bytes:
    return msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "SendMessage",
            "params": {"message": {"messageId": f"m{n}", "role": "ROLE_USER", "parts": [{"text": "x" * 64}]}},
        }
    )


class _Connection:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads the answer: the load generator.

    httpx's client costs about 5 ms of CPU per call at 32 in flight on this kind of machine,
    more than either server; this costs a few tens of microseconds, so the servers are what
    is measured.
    """

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path or "/"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes) -> bytes:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"A2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        headers = await self.reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length: *(\d+)", headers)
        if length is None:
            raise RuntimeError(f"{self.path}: an answer without Content-Length: {headers[:200]!r}")
        return await self.reader.readexactly(int(length.group(1)))

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


async def _call(conn: _Connection, n: int) -> None:
    answer = msgspec.json.decode(await conn.post(_body(n)))
    state = answer.get("result", {}).get("task", {}).get("status", {}).get("state")
    if state != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"unexpected answer {answer!r:.300}")


async def _throughput(url: str, calls: int, concurrency: int) -> float:
    per_worker = max(1, calls // concurrency)

    async def worker(w: int) -> None:
        conn = _Connection(url)
        try:
            for i in range(per_worker):
                await _call(conn, w * per_worker + i)
        finally:
            await conn.aclose()

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for w in range(concurrency):
            tg.start_soon(worker, w)
    return per_worker * concurrency / (time.perf_counter() - start)


async def _p50(url: str, n: int) -> float:
    conn = _Connection(url)
    samples = []
    try:
        for i in range(n):
            start = time.perf_counter()
            await _call(conn, i)
            samples.append((time.perf_counter() - start) * 1000)
    finally:
        await conn.aclose()
    return percentile(samples, 0.5)


async def _measure(
    urls: dict[str, str], calls: int, sequential: int, concurrency: int, rounds: int
) -> GatewayReport:
    windows: list[dict[str, Any]] = []
    for url in urls.values():  # warm both up: connections, caches, the SDK's imports
        await _throughput(url, min(calls, 500), concurrency)
    for _ in range(rounds):
        for mode, url in urls.items():
            cal = calibrate()
            windows.append({"mode": mode, "kind": "throughput", "calibration_ms": cal,
                            "value": await _throughput(url, calls, concurrency)})  # fmt: skip
            cal = calibrate()
            windows.append({"mode": mode, "kind": "p50_ms", "calibration_ms": cal,
                            "value": await _p50(url, sequential)})  # fmt: skip
    typical = statistics.median(w["calibration_ms"] for w in windows)
    for w in windows:
        w["disturbed"] = w["calibration_ms"] > typical * DISTURBED

    def median(mode: str, kind: str) -> float:
        values = [
            w["value"] for w in windows if w["mode"] == mode and w["kind"] == kind and not w["disturbed"]
        ]
        values = values or [w["value"] for w in windows if w["mode"] == mode and w["kind"] == kind]
        return float(statistics.median(values))

    throughput = {mode: median(mode, "throughput") for mode in urls}
    p50 = {mode: median(mode, "p50_ms") for mode in urls}
    return GatewayReport(
        throughput=throughput,
        latency_p50_ms=p50,
        ratio_throughput=throughput["gateway"] / throughput["sdk"],
        ratio_p50=p50["gateway"] / p50["sdk"],
        windows=windows,
    )


def _start(
    stack: ExitStack, argv: list[str], env: dict[str, str], ready: str
) -> tuple[subprocess.Popen[str], str]:
    """Start a process and wait for a stdout line matching ``ready``; returns it and the match."""
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=die_with_parent,
    )
    stack.callback(_stop, proc)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{argv[:4]} exited with {proc.wait()} before it was ready")
        match = re.search(ready, line)
        if match:
            return proc, match.group(1) if match.groups() else line
    raise RuntimeError(f"{argv[:4]} was not ready in 60 s")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def run_gateway_bench(
    *,
    calls: int = 2000,
    sequential: int = 300,
    concurrency: int = 32,
    rounds: int = 3,
    nats_url: str | None = None,
    redis_url: str | None = None,
    durable: bool = False,
) -> GatewayReport:
    """``durable``: the gateway runs each message as a durable task (JetStream), the agent takes them."""
    if not _SDK_SERVER.exists():
        raise RuntimeError(
            f"the SDK's echo server script is missing ({_SDK_SERVER}): run from a source checkout"
        )
    sdk_python = ensure_sdk_python()
    with ExitStack() as stack:
        if nats_url is None:
            nats_url = stack.enter_context(NatsServer()).url
        if redis_url is None:
            redis_url = stack.enter_context(RedisServer()).url
        env = {
            **os.environ,
            "NATS_URL": nats_url,
            "REDIS_URL": redis_url,
            "A2A_NAMESPACE": "gwbench" + uuid.uuid4().hex[:8],
            "A2A_LOG_LEVEL": "WARNING",
            "A2A_TASKS": "1" if durable else "0",
        }
        cli = [sys.executable, "-m", "a2a"]
        agent = subprocess.Popen(
            [*cli, "serve", "a2a.bench.gateway:ECHO"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        stack.callback(_stop, agent)  # type: ignore[arg-type]
        _, gateway_port = _start(stack, [*cli, "gateway", "--port", "0"], env, r"http://127\.0\.0\.1:(\d+)/")
        sdk_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        _, sdk_port = _start(
            stack,
            [str(sdk_python), "-E", "-s", str(_SDK_SERVER), "--port", "0", "--no-streaming"],
            sdk_env,
            r"READY (\d+)",
        )
        urls = {
            "gateway": f"http://127.0.0.1:{gateway_port}/agents/gw-echo",
            "sdk": f"http://127.0.0.1:{sdk_port}/",
        }
        anyio.run(_wait_for_agent, urls["gateway"])
        return anyio.run(_measure, urls, calls, sequential, concurrency, rounds)


async def _wait_for_agent(url: str) -> None:
    """Until the gateway's registry view has the echo agent (its card answers)."""
    card = url + "/.well-known/agent-card.json"
    async with httpx.AsyncClient(timeout=5) as client:
        with anyio.fail_after(30):
            while (await client.get(card)).status_code != 200:
                await anyio.sleep(0.1)
