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
from .config import Settings
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
        err_console.print(
            "a server exited unexpectedly:", *(s.log_tail() for s in started if not s.running)
        )
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for server in started:
            server.cleanup()


def cmd_serve(args: argparse.Namespace) -> int:
    agents = _load_agents(args.targets)
    settings = _settings(args)

    async def serve() -> None:
        async with Runtime(settings) as rt:
            hosts = await rt.serve(*agents)
            for host in hosts:
                logging.getLogger("a2a").info(
                    "serving %s as %s on %s", host.agent.name, host.instance_id, settings.nats_url
                )
            await rt.serve_forever()

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

    return run_demo(console, nats_url=args.nats_url, redis_url=args.redis_url)


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
    p.add_argument(
        "--namespace", help="deployment namespace (env A2A_NAMESPACE, default 'default')"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="a2a", description="Distributed agent-to-agent runtime on NATS and Redis."
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "up", help="run an embedded dev cluster: nats-server (JetStream) and Redis/Valkey"
    )
    p.add_argument("--nats-port", type=int, help="port for nats-server (default: a free port)")
    p.add_argument(
        "--redis-port", type=int, help="port for the Redis server (default: a free port)"
    )
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("serve", help="run agents in this process until stopped")
    p.add_argument(
        "targets", nargs="+", metavar="module:attr", help="an Agent, or a list of Agents"
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
    p.add_argument(
        "--nats-url", help="use this NATS server instead of an embedded one (env NATS_URL)"
    )
    p.add_argument("--redis-url", help="use this Redis instead of an embedded one (env REDIS_URL)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("schemas", help="write the JSON Schemas of the wire types")
    p.add_argument("--out", default="schemas", help="directory (default: ./schemas)")
    p.set_defaults(func=cmd_schemas)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    level = os.environ.get("A2A_LOG_LEVEL") or (
        "DEBUG"
        if args.verbose > 1
        else "INFO"
        if args.verbose or args.command == "serve"
        else "WARNING"
    )
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    sys.exit(args.func(args))
