"""The ``a2a`` command line."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from bus.errors import A2AError
from discovery import Registry

from .agent import Agent
from .config import Settings, connect_nats
from .route import Target, by_capability
from .runtime import Runtime

__all__ = ["main"]

# Piped output (CI logs, `| less`) gets a width that fits the timeline instead of rich's 80.
_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 140
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


def _settings(args: argparse.Namespace, **extra: Any) -> Settings:
    return Settings.from_env(
        nats_url=getattr(args, "nats_url", None),
        redis_url=getattr(args, "redis_url", None),
        namespace=getattr(args, "namespace", None),
        **extra,
    )


def _load_agents(targets: Sequence[str]) -> list[Agent]:
    agents: list[Agent] = []
    for target in targets:
        module_name, _, attr = target.partition(":")
        if not attr:
            raise SystemExit(f"a2a serve: expected module:attribute, got {target!r}")
        obj = getattr(importlib.import_module(module_name), attr)
        found = [obj] if isinstance(obj, Agent) else list(obj)
        if not all(isinstance(a, Agent) for a in found):
            raise SystemExit(f"a2a serve: {target} is neither an Agent nor a list of Agents")
        agents.extend(found)
    return agents


# -- commands ------------------------------------------------------------------------


def cmd_up(args: argparse.Namespace) -> int:
    from .servers import NatsServer, RedisServer

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
    from .telemetry import Telemetry

    agents = _load_agents(args.targets)
    settings = _settings(args, health_port=args.health_port)
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


def cmd_agents(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if not settings.redis_url:
        err_console.print("a2a agents needs a registry: set REDIS_URL or --redis-url")
        return 2

    async def fetch() -> list[Any]:
        registry = Registry.from_url(settings.redis_url or "", namespace=settings.namespace)
        try:
            return await registry.list_agents()
        finally:
            await registry.aclose()

    try:
        profiles = anyio.run(fetch)
    except A2AError as exc:
        err_console.print(f"[red]{exc}[/]")
        return 1
    table = Table(title=f"Agents in namespace {settings.namespace!r}", title_justify="left")
    for column in ("name", "instance", "capabilities", "status", "load", "last heartbeat"):
        table.add_column(column)
    now = time.time() * 1000
    for p in sorted(profiles, key=lambda p: (p.name, p.agent_id)):
        caps = ", ".join(f"{c.id}({c.proficiency:g})" for c in p.capabilities)
        style = {"available": "green", "busy": "yellow"}.get(p.status, "red")
        table.add_row(
            p.name,
            p.agent_id,
            caps,
            f"[{style}]{p.status}[/]",
            f"{p.load}/{p.capacity}",
            f"{(now - p.last_seen) / 1000:.1f} s ago",
        )
    console.print(table)
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
    settings = _settings(args, client_name="cli")

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
    from .demo.run import run_demo

    return run_demo(
        console,
        nats_url=args.nats_url,
        redis_url=args.redis_url,
        external_agents=args.external_agents,
        workspace_dir=args.workspace,
    )


def cmd_history(args: argparse.Namespace) -> int:
    from .history import HistoryStore

    settings = _settings(args)
    if not settings.redis_url:
        err_console.print("a2a history needs the history store: set REDIS_URL or --redis-url")
        return 2

    async def fetch() -> tuple[Any, ...]:
        registry = Registry.from_url(settings.redis_url or "", namespace=settings.namespace)
        try:
            store = HistoryStore(registry.redis, settings.namespace)
            return (
                await store.owner(args.conversation),
                await store.interactions(args.conversation),
                await store.messages(args.conversation),
            )
        finally:
            await registry.aclose()

    try:
        owner, interactions, messages = anyio.run(fetch)
    except A2AError as exc:
        err_console.print(f"[red]{exc}[/]")
        return 1
    if owner is None and not interactions and not messages:
        err_console.print(
            f"no history for conversation {args.conversation!r} in namespace {settings.namespace!r}"
        )
        return 1
    console.print(f"conversation {args.conversation}  user {owner or '-'}  {len(messages)} message(s)")
    table = Table(title="Sub-agent interactions", title_justify="left")
    for column in (
        "time",
        "caller → target",
        "task",
        "output (preview)",
        "ok",
        "duration",
        "tokens",
        "thread",
    ):
        table.add_column(column)
    for i in interactions:
        table.add_row(
            time.strftime("%H:%M:%S", time.localtime(i.at)),
            f"{i.caller} → {i.target}",
            i.task,
            i.output_preview,
            "[green]yes[/]" if i.success else f"[red]no[/] {i.error_code or ''}",
            f"{i.duration_ms:.0f} ms",
            str(i.tokens_used),
            i.thread_id or "",
        )
    console.print(table)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    import nats.errors

    from transports import TransportError

    from .audit import AuditFilter, read_audit

    settings = _settings(args)
    match = AuditFilter(
        agent=args.agent, user_id=args.user, conversation_id=args.conversation, outcome=args.outcome
    )

    async def fetch() -> list[Any]:
        transport = await connect_nats(settings, name="a2a-audit")
        try:
            return await read_audit(transport, settings.namespace, match, limit=args.limit)
        finally:
            await transport.aclose()

    try:
        records = anyio.run(fetch)
    except (TransportError, nats.errors.Error) as exc:  # nats.js.errors.NotFoundError: no stream yet
        err_console.print(f"[red]cannot read the audit stream:[/] {exc}")
        return 1
    if args.json:
        import msgspec

        for r in records:
            print(msgspec.json.encode(r).decode())
        return 0
    table = Table(
        title=f"Audit of namespace {settings.namespace!r} ({len(records)} records)", title_justify="left"
    )
    for column in ("time", "request", "origin → target", "action", "user", "outcome", "duration", "side"):
        table.add_column(column)
    for r in records:
        outcome = r.outcome + (f" {r.error_code}" if r.error_code else "")
        table.add_row(
            time.strftime("%H:%M:%S", time.localtime(r.started_at / 1000)),
            r.request_id[-8:],
            f"{r.origin} → {r.target}",
            r.action,
            r.user_id or "",
            outcome,
            f"{r.duration_ms:.1f} ms",
            r.side,
        )
    console.print(table)
    return 0


def cmd_nats_config(args: argparse.Namespace) -> int:
    from .nats_config import render_authorization
    from .roster import Roster, RosterError

    try:
        roster = Roster.load(args.roster)
    except RosterError as exc:
        err_console.print(str(exc))
        return 2
    text = render_authorization(roster, args.namespace, clients=args.client or ["client"])
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import importlib.util

    import msgspec

    from .bench.throughput import BenchConfig, run_bench

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
    from .bench.report import render

    for report in reports:
        console.print(render(report))
    return 0


def cmd_schemas(args: argparse.Namespace) -> int:
    from .schema import wire_schemas

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in wire_schemas().items():
        (out / name).write_text(text)
        console.print(f"wrote {out / name}")
    return 0


# -- parser ----------------------------------------------------------------------------


def _connection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nats-url", help="NATS server URL(s) (env NATS_URL)")
    p.add_argument("--redis-url", help="registry Redis URL (env REDIS_URL)")
    p.add_argument("--namespace", help="deployment namespace (env A2A_NAMESPACE, default 'default')")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="a2a", description="Distributed agent-to-agent runtime on NATS and Redis."
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("up", help="run an embedded dev cluster: nats-server (JetStream) and Redis/Valkey")
    p.add_argument("--nats-port", type=int, help="port for nats-server (default: a free port)")
    p.add_argument("--redis-port", type=int, help="port for the Redis server (default: a free port)")
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("serve", help="run agents in this process until stopped")
    p.add_argument("targets", nargs="+", metavar="module:attr", help="an Agent, or a list of Agents")
    p.add_argument(
        "--health-port", type=int, help="serve /livez, /readyz, /healthz here (env A2A_HEALTH_PORT)"
    )
    _connection_options(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("agents", help="list the registry: instances, capabilities, status, load")
    _connection_options(p)
    p.set_defaults(func=cmd_agents)

    p = sub.add_parser("call", help="call an agent and print the result or the typed error")
    p.add_argument("args", nargs="+", metavar="AGENT ACTION | ACTION")
    p.add_argument(
        "--capability",
        action="append",
        help="route by capability instead of agent name (repeatable)",
    )
    p.add_argument("--params", help="parameters as a JSON object")
    p.add_argument("--timeout", type=float, help="seconds (default A2A_TIMEOUT or 30)")
    p.add_argument("--user", help="userId carried down the call chain")
    _connection_options(p)
    p.set_defaults(func=cmd_call)

    p = sub.add_parser(
        "demo", help="planner -> reader -> writer -> reviewer across processes, with a hop timeline"
    )
    p.add_argument("--nats-url", help="use this NATS server instead of an embedded one (env NATS_URL)")
    p.add_argument("--redis-url", help="use this Redis instead of an embedded one (env REDIS_URL)")
    p.add_argument(
        "--external-agents",
        action="store_true",
        help="the agents already run elsewhere (containers) in A2A_NAMESPACE; only send the task",
    )
    p.add_argument("--workspace", help="create the demo workspace here (a directory the agents share)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("history", help="a conversation's sub-agent interactions, from the history store")
    p.add_argument("conversation", help="conversation (or thread) id")
    _connection_options(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("audit", help="audit records kept in JetStream, filtered")
    p.add_argument("--agent", help="records where this agent is origin or target")
    p.add_argument("--user", help="records of this userId")
    p.add_argument("--conversation", help="records of this conversation")
    p.add_argument("--outcome", choices=["ok", "error", "refused", "cancelled"])
    p.add_argument("--limit", type=int, default=200, help="at most this many, the newest (default 200)")
    p.add_argument("--json", action="store_true", help="one JSON record per line")
    _connection_options(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("nats-config", help="nats-server users with per-agent permissions, from a roster")
    p.add_argument("--roster", required=True, help="roster file (YAML or TOML)")
    p.add_argument("--namespace", default="default", help="deployment namespace (default 'default')")
    p.add_argument("--client", action="append", help="user name for callers outside agents (repeatable)")
    p.add_argument("--out", help="write here instead of standard output")
    p.set_defaults(func=cmd_nats_config)

    p = sub.add_parser("bench", help="runtime vs raw nats-py / redis-py, measured in the same run")
    p.add_argument("--json", action="store_true", help="machine-readable figures, ratios included")
    p.add_argument("--loop", choices=["asyncio", "uvloop", "both"], default="both")
    p.add_argument("--calls", type=int, default=5000, help="calls per throughput window")
    p.add_argument("--sequential", type=int, default=1000, help="calls per latency window")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3, help="alternating raw/runtime rounds")
    p.add_argument("--memory-calls", type=int, default=100_000)
    p.add_argument("--quick", action="store_true", help="a short run (about 30 s) for a first look")
    p.add_argument("--nats-url", help="use this server instead of an embedded one")
    p.add_argument("--redis-url", help="use this server instead of an embedded one")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("schemas", help="write the JSON Schemas of the wire types")
    p.add_argument("--out", default="schemas", help="directory (default: ./schemas)")
    p.set_defaults(func=cmd_schemas)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    level = os.environ.get("A2A_LOG_LEVEL") or (
        "DEBUG" if args.verbose > 1 else "INFO" if args.verbose or args.command == "serve" else "WARNING"
    )
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    sys.exit(args.func(args))
