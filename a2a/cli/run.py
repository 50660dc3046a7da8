"""Commands that run things: agents, the demo, the benchmark."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

import anyio

from ..core.agent import Agent
from ..core.runtime import Runtime
from ..core.settings import Settings, read_dev_cluster
from .common import CommandError, console, load_agents, settings_from
from .servers import check_redis_for_serving
from .up import check_server_environment

if TYPE_CHECKING:
    from ..observability.telemetry import Telemetry

__all__ = ["cmd_bench", "cmd_demo", "cmd_serve"]


class _Shutdown:
    """SIGINT or SIGTERM ends ``a2a serve``: a start-up still connecting is cancelled at once;
    once connected, the server finishes starting its agents and leaves its ``async with``
    normally, so they deregister and in-flight requests may finish."""

    def __init__(self) -> None:
        self.requested = anyio.Event()
        self.serving = False

    async def watch(self, signals: AsyncIterator[int], startup: anyio.CancelScope) -> None:
        async for signum in signals:
            logging.getLogger("a2a").info("received %s; shutting down", signal.Signals(signum).name)
            self.requested.set()
            if not self.serving:
                startup.cancel()
            return


async def _serve(
    settings: Settings, telemetry: Telemetry, agents: list[Agent], check: Callable[[], Awaitable[None]]
) -> bool:
    """Serve ``agents`` until a signal, once connected and ``check`` passed; False when the signal
    came before they were serving."""
    shutdown = _Shutdown()
    # Signals are caught before anything registers, so a SIGTERM at any point after
    # this deregisters cleanly instead of leaving the instance to expire.
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:
            tg.start_soon(shutdown.watch, signals, tg.cancel_scope)
            async with Runtime(settings, telemetry=telemetry) as rt:
                # Connected: from here a signal is a normal stop, once the agents (which may
                # already be registered and visible) are up, then deregistered on the way out.
                shutdown.serving = True
                await check()
                if settings.health_port is not None:
                    await rt.serve_health(settings.health_port)
                for host in await rt.serve(*agents):
                    logging.getLogger("a2a").info(
                        "serving %s as %s on %s", host.agent.name, host.instance_id, settings.nats_url
                    )
                await shutdown.requested.wait()
            tg.cancel_scope.cancel()
    return shutdown.serving


def cmd_serve(args: argparse.Namespace) -> int:
    from ..observability.telemetry import Telemetry

    settings = settings_from(args, health_port=args.health_port)
    agents = load_agents(args.targets)
    telemetry = Telemetry.from_env("+".join(a.name for a in agents))
    check = partial(check_redis_for_serving, args, settings.redis_url)
    served = anyio.run(_serve, settings, telemetry, agents, check)
    return 0 if served else 130  # 130: interrupted while starting, as after Ctrl-C elsewhere


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo.run import run_demo

    # Check the environment before starting servers and agent processes; without
    # --external-agents the demo runs in a fresh namespace of its own.
    check_server_environment()
    nats_url = args.nats_url or os.environ.get("NATS_URL")
    redis_url = args.redis_url or os.environ.get("REDIS_URL")
    found = None if nats_url else read_dev_cluster()  # the servers of a running `a2a up`, if any
    if found is not None and found.running:
        nats_url, redis_url = found.values["NATS_URL"], redis_url or found.values["REDIS_URL"]
        console.print(f"[dim]using the dev cluster of a2a up (pid {found.pid}, {found.path})[/]")
    elif found is not None:
        console.print(f"[dim]ignoring {found.path}: the a2a up that wrote it (pid {found.pid}) is gone[/]")
    Settings.from_env(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace=None if args.external_agents else "demo",
    )
    return run_demo(
        console,
        nats_url=nats_url,
        redis_url=redis_url,
        external_agents=args.external_agents,
        workspace_dir=args.workspace,
    )


def cmd_bench(args: argparse.Namespace) -> int:
    import importlib.util

    import msgspec

    from ..bench.throughput import BenchConfig, run_bench

    if args.gateway:
        return _bench_gateway(args)
    if args.durable:
        from ..bench.durable import DurableConfig, run_durable_bench
        from ..bench.durable import render as render_durable

        quick = DurableConfig(tasks=300, sequential=50, rounds=1) if args.quick else None
        durable = run_durable_bench(nats_url=args.nats_url, config=quick)
        print(msgspec.json.encode(durable).decode() if args.json else render_durable(durable))
        return 0
    if args.chaos:
        return _bench_chaos(args)
    if args.registry:
        from ..bench.registry_load import render as render_registry
        from ..bench.registry_load import run_registry_bench

        seconds = args.seconds if args.seconds is not None else 10
        results = run_registry_bench(redis_url=args.redis_url, sizes=args.sizes, seconds=seconds)
        print(msgspec.json.encode(results).decode() if args.json else render_registry(results))
        return 0

    loops = ["asyncio", "uvloop"] if args.loop == "both" else [args.loop]
    if "uvloop" in loops and importlib.util.find_spec("uvloop") is None:
        if args.loop == "uvloop":
            raise CommandError("uvloop is not installed: pip install 'a2a-runtime[uvloop]'", status=2)
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


def _bench_chaos(args: argparse.Namespace) -> int:
    """``a2a bench --chaos``: exit 0 when every guarantee held, 1 when one broke."""
    import msgspec

    from ..bench.chaos import ChaosConfig, run_chaos
    from ..bench.chaos_report import render as render_chaos
    from ..dev.servers import ServerError

    if args.nats_url or args.redis_url:
        raise CommandError(
            "--chaos starts and kills its own servers: leave out --nats-url and --redis-url", status=2
        )
    config = ChaosConfig(
        scenario=args.scenario,
        tasks=args.tasks,
        seconds=args.seconds if args.seconds is not None else 60,
        outage=args.outage,
        seed=args.seed,
    )
    try:
        report = run_chaos(config)
    except ServerError as exc:
        raise CommandError(f"the chaos run could not start its servers: {exc}") from None
    print(msgspec.json.encode(report).decode() if args.json else render_chaos(report))
    return 0 if report["ok"] else 1


def _bench_gateway(args: argparse.Namespace) -> int:
    import msgspec

    from ..bench.gateway import run_gateway_bench

    calls, sequential, rounds = (1000, 200, 2) if args.quick else (args.calls, args.sequential, args.rounds)
    report = run_gateway_bench(
        calls=calls,
        sequential=sequential,
        concurrency=min(args.concurrency, 64),
        rounds=rounds,
        nats_url=args.nats_url,
        redis_url=args.redis_url,
        durable=args.durable,
    )
    if args.json:
        print(msgspec.json.encode(report).decode())
        return 0
    left_out = sum(1 for w in report.windows if w["disturbed"])
    print("A2A SendMessage (JSON-RPC 1.0), echo agent, same load generator")
    tasks = "durable task" if args.durable else "call"
    for mode, label in (
        ("gateway", f"a2a gateway -> NATS {tasks} -> bus agent"),
        ("sdk", "a2a-sdk server, echo executor"),
    ):
        print(
            f"  {label:34} {report.throughput[mode]:8.0f} calls/s   p50 {report.latency_p50_ms[mode]:6.2f} ms"
        )
    print(f"  ratio gateway/sdk: throughput {report.ratio_throughput:.2f}, p50 {report.ratio_p50:.2f}")
    print(f"  {len(report.windows)} windows, {left_out} left out as disturbed")
    return 0
