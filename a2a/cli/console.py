"""``a2a console``: the web console (``--demo`` adds agents to try it with, on embedded servers);
``a2a watch``: the same live events as lines in a terminal."""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Sequence
from contextlib import ExitStack
from functools import partial
from typing import Any

import anyio

from .common import CommandError, lazy, seconds, settings_from

__all__ = ["add_console_parser", "add_watch_parser", "cmd_console"]


def add_console_parser(
    sub: Any, parents: Sequence[argparse.ArgumentParser], connection_options: object
) -> None:
    p = sub.add_parser(
        "console",
        parents=parents,
        help="web console: registry, live call timelines, operator-driven sessions",
        description="Serve the web console. Without credentials it serves loopback only, to the user --user;"
        " with A2A_CONSOLE_TOKENS=token:user,... each person logs in at /login?token=...",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8470, help="port (default 8470; 0 picks a free one)")
    p.add_argument("--user", default="local", help="who the console acts for without credentials")
    p.add_argument(
        "--demo",
        action="store_true",
        help="also serve a stdio local agent 'drafter' and a bus agent 'reviewer' (embedded servers"
        " when NATS_URL / REDIS_URL are unset)",
    )
    p.add_argument(
        "--jaeger-url",
        help="Jaeger's UI (http(s)://host:16686): each call links to its call tree there (A2A_JAEGER_URL)",
    )
    p.add_argument(
        "--jaeger-service",
        help="the service Jaeger searches: a name, or {agent} for the called agent's (A2A_JAEGER_SERVICE)",
    )
    assert callable(connection_options)
    connection_options(p)
    p.set_defaults(func=cmd_console)


def cmd_console(args: argparse.Namespace) -> int:
    from ..console import ConsoleAuth, serve_console
    from ..console.auth import parse_tokens
    from ..console.links import Jaeger
    from ..core.runtime import Runtime
    from ..core.settings import read_dev_cluster
    from ..dev.servers import NatsServer, RedisServer
    from ..sessions import Sessions

    if not 0 <= args.port <= 65535:
        raise CommandError("--port must be between 0 and 65535", status=2)
    jaeger = None
    if args.jaeger_url is not None:
        try:
            jaeger = Jaeger.checked(args.jaeger_url, args.jaeger_service or "{agent}")
        except ValueError as exc:
            raise CommandError(f"--jaeger-url: {exc}", status=2) from None
    auth = ConsoleAuth(args.user, parse_tokens(os.environ.get("A2A_CONSOLE_TOKENS", "")))
    with ExitStack() as stack:
        urls: dict[str, Any] = {}
        given = args.nats_url or os.environ.get("NATS_URL")
        found = None if given else read_dev_cluster()  # --demo uses a running `a2a up`'s servers
        embedded = args.demo and not (found is not None and found.running)
        if embedded and not given:
            urls["nats_url"] = stack.enter_context(NatsServer()).url
        if embedded and not (args.redis_url or os.environ.get("REDIS_URL")):
            urls["redis_url"] = stack.enter_context(RedisServer()).url
        for key, value in urls.items():
            setattr(args, key, value)
            print(
                f"started {'nats-server' if key == 'nats_url' else 'Redis'} on {value} for the demo",
                flush=True,
            )
        settings = settings_from(args)
        if not settings.redis_url:
            raise CommandError("the console keeps sessions in Redis: set REDIS_URL or --redis-url", status=2)

        async def run() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async with (
                    Runtime(settings) as runtime,
                    Sessions(runtime) as sessions,
                    anyio.create_task_group() as tg,
                ):
                    if args.demo:
                        from ..console.demo import serve_demo_agents

                        await serve_demo_agents(runtime, sessions, args.user)
                    serve = partial(
                        serve_console,
                        runtime,
                        sessions,
                        host=args.host,
                        port=args.port,
                        auth=auth,
                        jaeger=jaeger,
                    )
                    port = await tg.start(serve)
                    print(f"A2A console on http://{args.host}:{port}/", flush=True)
                    print(f"NATS {settings.nats_url}, Redis {settings.redis_url}", flush=True)
                    if args.demo:
                        print("start a session: local agent drafter, remote agent reviewer", flush=True)
                    async for _ in signals:
                        break
                    tg.cancel_scope.cancel()

        anyio.run(run)
    return 0


def add_watch_parser(
    sub: Any, parents: Sequence[argparse.ArgumentParser], connection_options: object
) -> None:
    p = sub.add_parser(
        "watch",
        parents=parents,
        help="print calls as they start and end (with durations), the calls still running, delegations"
        " and session turns",
        description="Print each call of the namespace: a call that runs longer than half a second as it"
        " starts ('X calling Y with task: T (running, 0.5 s so far)'), every call when it ends ('Y"
        " returned: SUCCESS (N tokens, 1.20 s)'); while calls run, a line every --every seconds lists"
        " them with their time so far ('running: X → Y 3.0 s'). Session turns and state changes too.",
    )
    p.add_argument("--conversation", help="only this conversation (or session id)")
    p.add_argument("--agent", help="only calls from or to this agent, sessions with it")
    p.add_argument("--user", help="only this user's calls and sessions")
    p.add_argument(
        "--every",
        type=seconds,
        default=5.0,
        help="seconds between two lines listing the calls still running, with their time so far (default 5)",
    )
    assert callable(connection_options)
    connection_options(p)
    p.set_defaults(func=lazy("watch", "cmd_watch"))
