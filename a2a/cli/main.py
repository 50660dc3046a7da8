"""The ``a2a`` command line: the parser, dispatch to the commands, and how failures are reported.

Every failure ends the same way: one line on standard error, ``a2a <command>: <reason>``,
and a non-zero exit status, never a traceback:

    2    bad usage: arguments, settings (options or environment), roster, agent targets
    1    running failed: a typed A2A error (``<CODE>: <message>``), a server that cannot be
         reached or refuses, a file that cannot be read or written, anything unexpected
    130  interrupted (Ctrl-C), quietly

Unexpected exceptions add a hint to rerun with ``-vv``, which prints the traceback too.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from .attach import add_attach_parser
from .common import (
    CommandError,
    describe_error,
    integer,
    lazy,
    nats_url,
    redis_url,
    seconds,
    sizes,
    subject_token,
)
from .console import add_console_parser, add_watch_parser
from .gateway import add_gateway_parser
from .parsers import add_call_parser, add_history_parser, add_up_parser
from .session import add_session_parser
from .stdio import add_stdio_parser
from .tasks import add_task_parsers

__all__ = ["build_parser", "main", "run_command"]

USAGE = 2
FAILED = 1
INTERRUPTED = 130
_MAX_LINE = 1000  # characters of a failure message; the rest is cut


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line with exit status 2; the usage text is one ``-h`` away."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {_one_line(message)} (see '{self.prog} -h')\n")


def _verbosity() -> _Parser:
    """``-v`` after the command as well as before it; SUPPRESS keeps the earlier count."""
    parent = _Parser(add_help=False)
    parent.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="more logging (-v info, -vv debug and tracebacks)",
    )
    return parent


def _connection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--nats-url",
        type=nats_url,
        help="NATS server URL(s) (env NATS_URL, else the dev cluster of 'a2a up', else nats://127.0.0.1:4222)",
    )
    p.add_argument(
        "--redis-url",
        type=redis_url,
        help="registry Redis URL (env REDIS_URL, else the dev cluster of 'a2a up', else redis://127.0.0.1:6379/0)",
    )
    p.add_argument(
        "--namespace",
        type=subject_token("namespace"),
        help="deployment namespace (env A2A_NAMESPACE, default 'default')",
    )


def _roster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--roster", required=True, help="roster file (YAML or TOML)")
    p.add_argument(
        "--namespace",
        type=subject_token("namespace"),
        default="default",
        help="deployment namespace (default 'default')",
    )
    p.add_argument(
        "--agents",
        action="append",
        metavar="module:attr",
        help="the agents' code (an Agent or a list of Agents, repeatable): what each declares is "
        "what its roster entry may advertise, when the entry lists no capabilities",
    )
    p.add_argument("--client", action="append", help="user name for callers outside agents (repeatable)")
    p.add_argument("--out", help="write here instead of standard output")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="a2a", description="Distributed agent-to-agent runtime on NATS and Redis.")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug and tracebacks)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    common = [_verbosity()]

    add_up_parser(sub, common)

    p = sub.add_parser("serve", parents=common, help="run agents in this process until stopped")
    p.add_argument("targets", nargs="+", metavar="module:attr", help="an Agent, or a list of Agents")
    p.add_argument(
        "--health-port",
        type=integer(0, 65535),
        help="serve /livez, /readyz, /healthz here (env A2A_HEALTH_PORT)",
    )
    _connection_options(p)
    p.set_defaults(func=lazy("run", "cmd_serve"))

    add_gateway_parser(sub, common, _connection_options)
    add_attach_parser(sub, common, _connection_options)
    add_stdio_parser(sub, common, _connection_options)
    add_console_parser(sub, common, _connection_options)
    add_watch_parser(sub, common, _connection_options)
    add_session_parser(sub, common, _connection_options)
    add_task_parsers(sub, common, _connection_options)

    add_call_parser(sub, common, _connection_options)

    p = sub.add_parser(
        "demo",
        parents=common,
        help="planner -> reader -> writer -> reviewer across processes, with a hop timeline",
    )
    p.add_argument(
        "--nats-url", type=nats_url, help="use this NATS server instead of an embedded one (env NATS_URL)"
    )
    p.add_argument(
        "--redis-url", type=redis_url, help="use this Redis instead of an embedded one (env REDIS_URL)"
    )
    p.add_argument(
        "--external-agents",
        action="store_true",
        help="the agents already run elsewhere (containers) in A2A_NAMESPACE; only send the task",
    )
    p.add_argument("--workspace", help="create the demo workspace here (a directory the agents share)")
    p.set_defaults(func=lazy("run", "cmd_demo"))

    add_history_parser(sub, common, _connection_options)

    p = sub.add_parser("audit", parents=common, help="audit records kept in JetStream, filtered")
    p.add_argument("--agent", help="records where this agent is origin or target")
    p.add_argument("--user", help="records of this userId")
    p.add_argument("--conversation", help="records of this conversation")
    p.add_argument("--outcome", choices=["ok", "error", "refused", "cancelled"])
    p.add_argument(
        "--limit",
        type=integer(1, 1_000_000),
        default=200,
        help="at most this many, the newest (default 200)",
    )
    p.add_argument("--json", action="store_true", help="one JSON record per line")
    _connection_options(p)
    p.set_defaults(func=lazy("info", "cmd_audit"))

    p = sub.add_parser(
        "nats-config", parents=common, help="nats-server users with per-agent permissions, from a roster"
    )
    _roster_options(p)
    p.add_argument(
        "--max-ttl",
        type=seconds,
        default=600.0,
        help="the agents' A2A_MAX_TTL: how long after a request they may still answer it (default 600)",
    )
    p.set_defaults(func=lazy("info", "cmd_nats_config"))

    p = sub.add_parser("grant-key", parents=common, help="a new entry-point key pair for signing user grants")
    p.set_defaults(func=lazy("info", "cmd_grant_key"))

    p = sub.add_parser(
        "redis-config", parents=common, help="Redis ACL users with per-agent key permissions, from a roster"
    )
    _roster_options(p)
    p.add_argument(
        "--load",
        action="store_true",
        help="load the registry's function library into the Redis at REDIS_URL (as its admin user)",
    )
    p.set_defaults(func=lazy("info", "cmd_redis_config"))

    p = sub.add_parser(
        "bench", parents=common, help="runtime vs raw nats-py / redis-py, measured in the same run"
    )
    p.add_argument("--json", action="store_true", help="machine-readable figures, ratios included")
    p.add_argument("--loop", choices=["asyncio", "uvloop", "both"], default="both")
    p.add_argument("--calls", type=integer(1, 10_000_000), default=5000, help="calls per throughput window")
    p.add_argument("--sequential", type=integer(1, 10_000_000), default=1000, help="calls per latency window")
    p.add_argument("--concurrency", type=integer(1, 10_000), default=64)
    p.add_argument("--rounds", type=integer(1, 1000), default=3, help="alternating raw/runtime rounds")
    p.add_argument("--memory-calls", type=integer(1, 100_000_000), default=100_000)
    p.add_argument("--quick", action="store_true", help="a short run (about 30 s) for a first look")
    p.add_argument(
        "--gateway",
        action="store_true",
        help="instead: the A2A gateway's SendMessage against the official SDK's server (source checkout)",
    )
    p.add_argument(
        "--durable",
        action="store_true",
        help="instead: durable tasks (submit -> result) against raw nats-py JetStream;"
        " with --gateway: the gateway runs each message as a durable task",
    )
    p.add_argument(
        "--registry",
        action="store_true",
        help="instead: a registry of N heartbeating instances, what it costs one view and Redis",
    )
    p.add_argument(
        "--chaos",
        action="store_true",
        help="instead: durable tasks while instances and servers are SIGKILLed; exit 1 if a guarantee breaks",
    )
    p.add_argument("--sizes", type=sizes, default=(1000, 10_000, 50_000), help="with --registry: 1000,10000")
    p.add_argument(
        "--seconds",
        type=integer(1, 3600),
        help="with --registry: seconds per phase (10); with --chaos: seconds of chaos (60)",
    )
    p.add_argument("--tasks", type=integer(1, 100_000), default=1000, help="with --chaos: tasks submitted")
    p.add_argument(
        "--scenario",
        choices=["instances", "server", "cluster"],
        default="instances",
        help="with --chaos: kill instances; and nats-server once; or a node of a 3-node R3 cluster",
    )
    p.add_argument(
        "--outage",
        type=seconds,
        default=2.0,
        help="with --chaos --scenario server|cluster: seconds the killed server stays down (2)",
    )
    p.add_argument("--seed", type=integer(0, 2**31 - 1), help="with --chaos: the random seed (printed)")
    p.add_argument("--nats-url", type=nats_url, help="use this server instead of an embedded one")
    p.add_argument("--redis-url", type=redis_url, help="use this server instead of an embedded one")
    p.set_defaults(func=lazy("run", "cmd_bench"))

    p = sub.add_parser("schemas", parents=common, help="write the JSON Schemas of the wire types")
    p.add_argument("--out", default="schemas", help="directory (default: ./schemas)")
    p.set_defaults(func=lazy("info", "cmd_schemas"))
    return parser


def _one_line(text: str) -> str:
    """``text`` on one line (whitespace runs become one space), cut to a readable length."""
    line = " ".join(text.split())
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


def _innermost(exc: BaseException) -> BaseException:
    """The first exception inside (possibly nested) exception groups, which carries the reason."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _explain(exc: BaseException) -> tuple[int, str] | None:
    """Exit status and message of an expected failure; None for an unexpected one."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, CommandError):
        return exc.status, text
    from bus.errors import A2AError
    from discovery.errors import is_redis_error
    from transports import TransportError

    if isinstance(exc, A2AError):  # before ValueError: some A2A errors are ValueErrors too
        return FAILED, describe_error(exc)
    if isinstance(exc, ValueError):  # settings, arguments, the roster (RosterError)
        return USAGE, text
    if isinstance(exc, TransportError) or is_redis_error(exc):  # a redis-py error no store translated
        return FAILED, f"cannot reach the server: {text}"
    if isinstance(exc, OSError):  # files, sockets
        return FAILED, text
    return None


def _report(command: str, exc: BaseException, verbose: int) -> int:
    """Print one line about ``exc`` to standard error; returns the exit status."""
    explained = _explain(exc)
    if verbose > 1:
        traceback.print_exception(exc)
    if explained is None:
        hint = "" if verbose > 1 else " (rerun with -vv for the traceback)"
        status, line = FAILED, f"unexpected {type(exc).__name__}: {exc}{hint}"
    else:
        status, line = explained
    sys.stderr.write(f"a2a {command}: {_one_line(line)}\n")
    return status


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command; every failure becomes one line on standard error and a status."""
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return INTERRUPTED
    except (Exception, BaseExceptionGroup) as exc:
        reason = _innermost(exc)
        if isinstance(reason, KeyboardInterrupt):
            return INTERRUPTED
        return _report(args.command, reason, args.verbose)


class _Redacting(logging.Filter):
    """Redacts what a log line quotes (``RedactingFilter``), made at the first line logged:
    a command that logs nothing does not import the redaction rules."""

    def __init__(self) -> None:
        super().__init__()
        self._filter: logging.Filter | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self._filter is None:
            from ..delegation.redact import RedactingFilter, Redactor

            self._filter = RedactingFilter(Redactor())
        return bool(self._filter.filter(record))


def _configure_logging(args: argparse.Namespace) -> None:
    level = os.environ.get("A2A_LOG_LEVEL") or (
        "DEBUG"
        if args.verbose > 1
        else "INFO"
        if args.verbose or args.command in ("serve", "serve-stdio")
        else "WARNING"
    )
    try:
        logging.basicConfig(
            level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
        )
        redacting = _Redacting()  # whatever a log line quotes, secrets stay out
        for handler in logging.getLogger().handlers:
            handler.addFilter(redacting)
    except ValueError:
        raise CommandError(
            f"invalid A2A_LOG_LEVEL {level!r}: use DEBUG, INFO, WARNING or ERROR", USAGE
        ) from None


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        _configure_logging(args)
    except CommandError as exc:
        sys.exit(_report(args.command, exc, args.verbose))
    sys.exit(run_command(args))
