"""Commands that run things: servers, agents, calls, the demo, the benchmark."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from typing import Any

import anyio

from bus.errors import A2AError

from ..core.route import Target, by_capability
from ..core.runtime import Runtime
from .common import console, err_console, load_agents, settings_from

__all__ = ["cmd_bench", "cmd_call", "cmd_demo", "cmd_serve", "cmd_up"]


def cmd_up(args: argparse.Namespace) -> int:
    from ..dev.servers import NatsServer, RedisServer

    started = []
    try:
        nats_url = os.environ.get("NATS_URL")
        if not nats_url:
            nats = NatsServer(args.nats_port).start()
            started.append(nats)
            nats_url = nats.url
        redis_url = os.environ.get("REDIS_URL")
        if not redis_url:
            redis = RedisServer(args.redis_port).start()
            started.append(redis)
            redis_url = redis.url
        console.print(f"export NATS_URL={nats_url}")
        console.print(f"export REDIS_URL={redis_url}")
        if not started:
            console.print("# NATS_URL and REDIS_URL point at running servers; nothing to start")
            return 0
        console.print(f"# {len(started)} server(s) running; Ctrl-C stops them", style="dim")
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while all(s.running for s in started):
            time.sleep(0.5)
        err_console.print("a server exited unexpectedly:", *(s.log_tail() for s in started if not s.running))
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for server in started:
            server.cleanup()


def cmd_serve(args: argparse.Namespace) -> int:
    from ..observability.telemetry import Telemetry

    agents = load_agents(args.targets)
    settings = settings_from(args, health_port=args.health_port)
    telemetry = Telemetry.from_env("+".join(a.name for a in agents))

    async def serve() -> None:
        # Signals are caught before anything registers, so a SIGTERM at any point after
        # this deregisters cleanly instead of leaving the instance to expire.
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with Runtime(settings, telemetry=telemetry) as rt:
                if settings.health_port is not None:
                    await rt.serve_health(settings.health_port)
                hosts = await rt.serve(*agents)
                for host in hosts:
                    logging.getLogger("a2a").info(
                        "serving %s as %s on %s", host.agent.name, host.instance_id, settings.nats_url
                    )
                async for signum in signals:
                    logging.getLogger("a2a").info("received %s; shutting down", signal.Signals(signum).name)
                    break

    anyio.run(serve)
    return 0


def cmd_call(args: argparse.Namespace) -> int:
    positional = list(args.args)
    target: Target
    if args.capability:
        if len(positional) != 1:
            err_console.print(
                "usage: a2a call --capability CAP [--capability CAP ...] ACTION [--params JSON]"
            )
            return 2
        target, action = by_capability(*args.capability), positional[0]
    else:
        if len(positional) != 2:
            err_console.print("usage: a2a call AGENT ACTION [--params JSON]")
            return 2
        target, action = positional
    try:
        params = json.loads(args.params) if args.params else None
    except json.JSONDecodeError as exc:
        err_console.print(f"--params is not valid JSON: {exc}")
        return 2
    if params is not None and not isinstance(params, dict):
        err_console.print("--params must be a JSON object")
        return 2
    settings = settings_from(args, client_name="cli")

    async def call() -> Any:
        async with Runtime(settings) as rt:
            return await rt.call(target, action, params, timeout=args.timeout, user_id=args.user)

    try:
        result = anyio.run(call)
    except A2AError as exc:
        err_console.print(f"[red]{exc.code}[/]: {exc.message}", highlight=False)
        where = ", ".join(
            x
            for x in (
                f"agent {exc.agent}" if exc.agent else "",
                f"hop {exc.hop}" if exc.hop is not None else "",
            )
            if x
        )
        if where:
            err_console.print(f"  at {where}", highlight=False)
        if exc.details:
            err_console.print(f"  details: {json.dumps(exc.details)}", highlight=False)
        return 1
    print(json.dumps(result, indent=2))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo.run import run_demo

    return run_demo(
        console,
        nats_url=args.nats_url,
        redis_url=args.redis_url,
        external_agents=args.external_agents,
        workspace_dir=args.workspace,
    )


def cmd_bench(args: argparse.Namespace) -> int:
    import importlib.util

    import msgspec

    from ..bench.throughput import BenchConfig, run_bench

    loops = ["asyncio", "uvloop"] if args.loop == "both" else [args.loop]
    if "uvloop" in loops and importlib.util.find_spec("uvloop") is None:
        if args.loop == "uvloop":
            err_console.print("uvloop is not installed: pip install 'a2a-runtime[uvloop]'")
            return 2
        loops.remove("uvloop")
    config = BenchConfig(
        calls=args.calls,
        sequential=args.sequential,
        concurrency=args.concurrency,
        rounds=args.rounds,
        memory_calls=args.memory_calls,
    )
    if args.quick:
        config = BenchConfig(calls=2000, sequential=300, rounds=2, memory_calls=20_000, registry_lookups=200)
    reports = [
        run_bench(nats_url=args.nats_url, redis_url=args.redis_url, loop=loop, config=config)
        for loop in loops
    ]
    if args.json:
        print(msgspec.json.encode(reports).decode())
        return 0
    from ..bench.report import render

    for report in reports:
        console.print(render(report))
    return 0
