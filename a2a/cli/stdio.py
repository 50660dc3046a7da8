"""``a2a serve-stdio NAME [options] -- COMMAND ...``: serve a local NDJSON program on the bus until stopped.

The program speaks the local prompt channel on stdin/stdout (:mod:`a2a.stdio`); ``--pool``
processes of it serve the agent ``NAME``. Options go between ``NAME`` and the ``--``
that starts the command; everything after it is the command, options included.
"""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from .common import CommandError, capability_id, integer, settings_from, subject_token

if TYPE_CHECKING:
    from ..core.agent import Agent
    from ..core.settings import Settings

__all__ = ["USAGE_LINE", "add_stdio_parser", "cmd_serve_stdio"]

USAGE_LINE = "a2a serve-stdio NAME [options] -- COMMAND [ARGS...]"
_USAGE = 2


def _pool(text: str) -> int:
    """``--pool``: 1 to the most processes a stdio agent runs (imported only when given)."""
    from ..stdio.peer import MAX_POOL

    return integer(1, MAX_POOL)(text)


def add_stdio_parser(
    sub: Any,
    parents: Sequence[argparse.ArgumentParser],
    connection_options: Callable[[argparse.ArgumentParser], None],
) -> None:
    p = sub.add_parser(
        "serve-stdio",
        parents=list(parents),
        usage=USAGE_LINE,
        help="serve a local program speaking NDJSON on stdio (desktop.local_prompt frames) until stopped",
    )
    p.add_argument("name", type=subject_token("agent name"), metavar="NAME", help="agent name on the bus")
    p.add_argument(
        "--pool",
        type=_pool,
        default=1,
        help="processes of the program, each taking one call at a time (default 1)",
    )
    p.add_argument(
        "--capability",
        action="append",
        type=capability_id,
        default=[],
        help="capability offered (repeatable)",
    )
    p.add_argument("--description", default="", help="the agent's description in the registry")
    p.add_argument("--cwd", help="working directory of the program")
    p.add_argument(
        "--health-port",
        type=integer(0, 65535),
        help="serve /livez, /readyz, /healthz here (env A2A_HEALTH_PORT)",
    )
    connection_options(p)
    p.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        metavar="COMMAND",
        help="after '--': the program and its arguments",
    )
    p.set_defaults(func=cmd_serve_stdio, stdio_parser=p)


def _command(args: argparse.Namespace) -> argparse.Namespace:
    """The arguments with the command split off: options after NAME are parsed again, in front of it."""
    rest = list(args.program)
    if rest and rest[0].startswith("-"):
        if "--" not in rest:
            raise CommandError(f"put '--' before the command: {USAGE_LINE}", _USAGE)
        cut = rest.index("--")
        parser: argparse.ArgumentParser = args.stdio_parser
        args = parser.parse_args([*rest[:cut], args.name, "--", *rest[cut + 1 :]], namespace=args)
        rest = list(args.program)
        if rest and rest[0] == "--":
            rest = rest[1:]
    if not rest:
        raise CommandError(f"no command to run: {USAGE_LINE}", _USAGE)
    args.program = rest
    return args


def _agent(args: argparse.Namespace) -> Agent:
    from ..stdio import stdio_agent

    try:
        return stdio_agent(
            args.name,
            args.program,
            pool=args.pool,
            capabilities=args.capability,
            description=args.description,
            cwd=args.cwd,
        )
    except ValueError as exc:
        raise CommandError(str(exc), _USAGE) from None


class _Shutdown:
    """A signal while connecting cancels at once; once serving, it ends the wait, so the
    instance deregisters and the processes are stopped on the way out of the runtime."""

    def __init__(self) -> None:
        self.requested = anyio.Event()
        self.serving = False

    async def watch(self, signals: Any, startup: anyio.CancelScope) -> None:
        async for signum in signals:
            logging.getLogger("a2a").info("received %s; shutting down", signal.Signals(signum).name)
            self.requested.set()
            if not self.serving:
                startup.cancel()
            return


async def _serve(args: argparse.Namespace, settings: Settings, agent: Agent) -> bool:
    """Serve ``agent`` until a signal; False when the signal came before it was serving."""
    from ..core.runtime import Runtime
    from ..observability.telemetry import Telemetry
    from .servers import check_redis_for_serving

    command, pool = args.program, args.pool
    shutdown = _Shutdown()
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:
            tg.start_soon(shutdown.watch, signals, tg.cancel_scope)
            async with Runtime(settings, telemetry=Telemetry.from_env(agent.name)) as rt:
                shutdown.serving = True
                await check_redis_for_serving(args, settings.redis_url)
                if settings.health_port is not None:
                    await rt.serve_health(settings.health_port)
                (host,) = await rt.serve(agent)
                logging.getLogger("a2a").info(
                    "serving stdio agent %s as %s: %d process(es) of %s",
                    agent.name,
                    host.instance_id,
                    pool,
                    " ".join(command)[:200],
                )
                await shutdown.requested.wait()
            tg.cancel_scope.cancel()
    return shutdown.serving


def cmd_serve_stdio(args: argparse.Namespace) -> int:
    args = _command(args)
    agent = _agent(args)
    settings = settings_from(args, health_port=args.health_port)
    served = anyio.run(_serve, args, settings, agent)
    return 0 if served else 130
