"""``a2a session``: start a session and follow it in the terminal, steer one, set a profile's policy."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from .common import CommandError, settings_from

__all__ = ["add_session_parser"]

CONTROLS = ("pause", "resume", "stop", "approve", "write", "takeover", "handback")


def add_session_parser(
    sub: Any, parents: Sequence[argparse.ArgumentParser], connection_options: object
) -> None:
    assert callable(connection_options)
    p = sub.add_parser("session", help="operator-driven sessions: a local agent talks to a remote one")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name: str, help: str) -> argparse.ArgumentParser:
        v: argparse.ArgumentParser = verbs.add_parser(name, parents=parents, help=help)
        v.add_argument(
            "--user", default=os.environ.get("A2A_USER", "local"), help="whose sessions (default local)"
        )
        connection_options(v)
        v.set_defaults(func=cmd_session, verb=name)
        return v

    start = verb("start", "start a session here and follow it until it ends (Ctrl-C stops it)")
    start.add_argument(
        "local", metavar="LOCAL", help="the local agent that drafts (a stdio agent, any bus agent)"
    )
    start.add_argument("remote", metavar="REMOTE", help="the agent the messages go to")
    start.add_argument("objective", metavar="OBJECTIVE")
    start.add_argument("--mode", choices=["manual", "semi_auto", "full_auto"], default="manual")
    start.add_argument("--max-turns", type=int, default=8)
    start.add_argument("--action", default="run", help="the remote agent's action (default run)")
    verb("list", "the user's sessions, newest first")
    show = verb("show", "one session: state, turns, ending")
    show.add_argument("id", metavar="ID")
    for name in CONTROLS:
        v = verb(name, f"{name} a session (from any process)")
        v.add_argument("id", metavar="ID")
        if name in ("approve", "write"):
            v.add_argument(
                "--text", required=name == "write", help="the message to send instead of the draft"
            )
    policy = verb("policy", "set what a local agent may send to (default: nothing)")
    policy.add_argument("local", metavar="LOCAL")
    policy.add_argument("--allow", default="", help="comma-separated remote agents it may send to")
    policy.add_argument("--max-hops", type=int, default=2)
    policy.add_argument("--max-concurrent", type=int, default=3)
    policy.add_argument("--per-minute", type=int, default=30)


def cmd_session(args: argparse.Namespace) -> int:
    from ..core.runtime import Runtime
    from ..sessions import Limits, Session, Sessions, SharedCallPolicy

    settings = settings_from(args)
    if not settings.redis_url:
        raise CommandError("sessions live in Redis: set REDIS_URL or --redis-url", status=2)

    async def run() -> int:
        async with Runtime(settings) as runtime, Sessions(runtime) as sessions:
            user = args.user
            if args.verb == "start":
                s = await sessions.start(
                    user_id=user,
                    profile_id=args.local,
                    remote=args.remote,
                    objective=args.objective,
                    mode=args.mode,
                    limits=Limits(max_turns=args.max_turns),
                    remote_action=args.action,
                )
                print(
                    f"session {s.id} started; steer it with: a2a session approve|pause|stop {s.id}",
                    flush=True,
                )
                return await _follow(runtime, sessions, s.id, user)
            if args.verb == "list":
                for s in await sessions.sessions(user):
                    print(
                        f"{s.id}  {s.state:<17} {s.profile_id} -> {s.remote}  {s.mode:<9}  {s.objective[:60]}"
                    )
                return 0
            if args.verb == "show":
                _print_session(await sessions.get(args.id, user))
                return 0
            if args.verb == "policy":
                allowed = [a.strip() for a in args.allow.split(",") if a.strip()]
                policy = SharedCallPolicy(
                    allow_shared_agent_calls=bool(allowed),
                    allowed_shared_device_ids=allowed,
                    max_hop_count=args.max_hops,
                    max_concurrent_shared_calls=args.max_concurrent,
                    max_calls_per_minute=args.per_minute,
                )
                await sessions.set_policy(user, args.local, policy)
                print(f"{args.local} may send to: {', '.join(allowed) or 'nobody'}")
                return 0
            controls: dict[str, Callable[[], Awaitable[Session]]] = {
                "pause": lambda: sessions.pause(args.id, user),
                "resume": lambda: sessions.resume(args.id, user),
                "stop": lambda: sessions.stop(args.id, user),
                "approve": lambda: sessions.approve(args.id, user, args.text),
                "write": lambda: sessions.write(args.id, user, args.text),
                "takeover": lambda: sessions.take_over(args.id, user),
                "handback": lambda: sessions.take_over(args.id, user, on=False),
            }
            s = await controls[args.verb]()
            print(f"session {s.id}: {s.state}")
            return 0

    return anyio.run(run)


async def _follow(runtime: Any, sessions: Any, session_id: str, user: str) -> int:
    """Print the session's turns as they come; at a TTY, ask about drafts that wait; end with it."""
    from ..console.feed import Event
    from ..console.watch import Watcher, WatchFilter

    watcher = Watcher(WatchFilter(conversation=session_id))
    asked: set[int] = set()
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                async for _ in signals:
                    await sessions.stop(session_id, user)
                    return

            tg.start_soon(stop_on_signal)
            while True:
                s = await sessions.get(session_id, user)
                for line in watcher.lines(Event("session", s, user)):
                    print(line, flush=True)
                if s.state in ("completed", "error", "stopped"):
                    tg.cancel_scope.cancel()
                    return 1 if s.state == "error" else 0
                if s.state == "ready_to_send" and s.review and s.version not in asked and sys.stdin.isatty():
                    asked.add(s.version)
                    await _ask(sessions, s, user)
                await anyio.sleep(0.2)
    return 0


async def _ask(sessions: Any, s: Any, user: str) -> None:
    """Ask the person at the terminal about a waiting draft; a session that moved on meanwhile
    (steered from the console, say) makes the answer moot, not the command fail."""
    from ..errors import A2AError

    try:
        await _answer(sessions, s, user)
    except A2AError as exc:
        print(f"not done: {exc.code}: {exc.message}", flush=True)


async def _answer(sessions: Any, s: Any, user: str) -> None:
    print(f"\n{s.review}\n--- draft ---\n{s.draft or '(none: write your own)'}\n-------------")
    answer = await anyio.to_thread.run_sync(
        input, "[s]end, [e]dit, [w]rite your own, [p]ause, s[t]op, Enter to wait: "
    )
    answer = answer.strip().lower()
    if answer == "s" and s.draft:
        await sessions.approve(s.id, user)
    elif answer in ("e", "w"):
        text = await anyio.to_thread.run_sync(input, "message: ")
        if answer == "e":
            await sessions.approve(s.id, user, text)
        else:
            await sessions.write(s.id, user, text)
    elif answer == "p":
        await sessions.pause(s.id, user)
    elif answer == "t":
        await sessions.stop(s.id, user)


def _print_session(s: Any) -> None:
    print(f"session {s.id}  {s.state}  {s.profile_id} -> {s.remote}  mode {s.mode}  user {s.user_id}")
    print(f"objective: {s.objective}")
    for t in s.turns:
        label = f" ({t.sent_by.replace('_', '-')})" if t.sent_by else ""
        print(f"  [{t.index}] {t.role}{label}: {t.text}")
    if s.draft is not None:
        print(f"  draft waiting ({s.review}): {s.draft}")
    if s.ending is not None:
        print(f"ended: {s.ending.kind}{' ' + s.ending.limit if s.ending.limit else ''}: {s.ending.message}")
