"""The ``a2a`` command line: the parser, and dispatch to the commands."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from .info import cmd_agents, cmd_audit, cmd_history, cmd_nats_config, cmd_schemas
from .run import cmd_bench, cmd_call, cmd_demo, cmd_serve, cmd_up

__all__ = ["build_parser", "main"]


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
