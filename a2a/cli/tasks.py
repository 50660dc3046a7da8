"""``a2a submit``, ``a2a task wait|get|cancel|events`` and ``a2a tasks``: durable tasks from the command line.

``submit`` prints the task id and returns at once; ``task wait`` prints the result, or the
typed error and exits 1; ``--json`` prints ``{"taskId", "state", "result" | "error"}``.
``task events`` follows the task's journal until it ends (one JSON object per line with
``--json``); ``tasks`` lists this identity's tasks for the user, newest first.
Durations are seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``90s``, ``30m``, ``2h``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from .common import MAX_SECONDS, CommandError, capability_id, integer, run_interruptibly, settings_from
from .task_setup import add_setup_parser

if TYPE_CHECKING:
    from bus.durable import TaskEvent, TaskOutcome

    from ..core.runtime import Runtime
    from ..core.settings import Settings
    from ..core.task_handle import Task

__all__ = ["add_task_parsers", "duration"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``2h`` or ``7d`` (above 0, at most a week)."""
    found = _DURATION.match(text)
    value = float(found.group(1)) * _UNIT[found.group(2)] if found else math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"expected a duration like 90s, 30m or 2h (at most 7d), got {text!r}"
        )
    return value


def add_task_parsers(
    sub: Any, parents: Sequence[argparse.ArgumentParser], connection_options: object
) -> None:
    assert callable(connection_options)
    p = sub.add_parser("submit", parents=parents, help="submit a durable task; prints its id at once")
    p.add_argument("args", nargs="+", metavar="AGENT ACTION | ACTION")
    p.add_argument("--capability", action="append", type=capability_id, help="route by capability")
    p.add_argument("--params", help="parameters as a JSON object")
    p.add_argument("--key", help="idempotency key: the same key again gives the same task")
    p.add_argument("--timeout", type=duration, help="how long the task may take (default A2A_TIMEOUT)")
    _common(p, connection_options)
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("task", help="follow or cancel a durable task by id")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, help in (
        ("wait", "wait for the task to end; print its result (exit 1 on its typed error)"),
        ("get", "print the task's state now (and its result or error when it ended)"),
        ("cancel", "cancel the task: no attempt starts after this, a running one is stopped"),
        ("events", "follow the task's attempts and progress until it ends"),
    ):
        v = verbs.add_parser(name, parents=parents, help=help)
        v.add_argument("id", metavar="ID")
        if name in ("wait", "events"):
            v.add_argument("--timeout", type=duration, help="give up waiting after this long")
        if name == "events":
            v.add_argument("--after", type=integer(0, 10**9), default=0, help="only events after this number")
        _common(v, connection_options)
        v.set_defaults(func=cmd_task, verb=name)
    add_setup_parser(verbs, list(parents))

    p = sub.add_parser("tasks", parents=parents, help="list your durable tasks, newest first")
    p.add_argument("--state", choices=("running", "completed", "failed", "cancelled"), help="only these")
    p.add_argument("--limit", type=integer(1, 10_000), default=50, help="at most this many (default 50)")
    _common(p, connection_options)
    p.set_defaults(func=cmd_tasks)


def _common(p: argparse.ArgumentParser, connection_options: Any) -> None:
    p.add_argument("--user", default=os.environ.get("A2A_USER"), help="whose task (env A2A_USER)")
    p.add_argument("--json", action="store_true", help="print JSON")
    connection_options(p)


def _runtime(settings: Settings) -> Runtime:
    from ..core.runtime import Runtime

    return Runtime(settings)


def cmd_submit(args: argparse.Namespace) -> int:
    from .call import call_target, parse_params

    target, action = call_target(args, "submit")
    params = parse_params(args.params)
    settings = settings_from(args, client_name="cli", tasks=True)

    async def submit() -> Task:
        async with _runtime(settings) as rt:
            return await rt.tasks.submit(
                target, action, params, key=args.key, timeout=args.timeout, user_id=args.user
            )

    task = run_interruptibly(submit)
    print(json.dumps({"taskId": task.id, "state": "queued"}) if args.json else task.id)
    return 0


def cmd_task(args: argparse.Namespace) -> int:
    settings = settings_from(args, client_name="cli", tasks=True)
    if args.verb == "events":
        return _follow(args, settings)

    async def act() -> TaskOutcome | None:
        async with _runtime(settings) as rt:
            task = await rt.tasks.get(args.id, user_id=args.user)
            if args.verb == "cancel":
                return await task.cancel()
            if args.verb == "get":
                return await task.peek()
            with anyio.move_on_after(args.timeout or math.inf):
                return await task.outcome()
            raise CommandError(f"task {args.id} has not ended within {args.timeout:g}s")

    outcome = run_interruptibly(act)
    return _report(args, outcome)


def _follow(args: argparse.Namespace, settings: Settings) -> int:
    """Print the task's events as they come; exit 1 when it ended with an error."""

    async def follow() -> str | None:
        async with _runtime(settings) as rt:
            task = await rt.tasks.get(args.id, user_id=args.user)
            with anyio.move_on_after(args.timeout or math.inf):
                async for event in task.events(after=args.after):
                    _print_event(event, args.json)
                    if event.kind == "ended":
                        return event.state
            raise CommandError(f"task {args.id} has not ended within {args.timeout:g}s")

    state = run_interruptibly(follow)
    return 0 if state == "completed" else 1


def _print_event(event: TaskEvent, as_json: bool) -> None:
    if as_json:
        import msgspec

        print(json.dumps(msgspec.to_builtins(event)), flush=True)
        return
    at = time.strftime("%H:%M:%S", time.localtime(event.at / 1000)) if event.at else "--:--:--"
    if event.kind == "attempt":
        text = f"attempt {event.attempt} started on {event.instance}"
    elif event.kind == "progress":
        text = json.dumps(event.data)
    elif event.kind == "handed-back":
        text = f"attempt {event.attempt}: {event.message}"
    elif event.kind == "child":
        child = event.data if isinstance(event.data, dict) else {}
        task, agent = child.get("taskId", "?"), child.get("agent", "?")
        text = f"attempt {event.attempt} submitted task {task} to {agent}"
    elif event.state == "completed":
        text = "completed: " + json.dumps(event.data)
    else:
        info = event.data or {}
        text = f"{event.state}: {info.get('code', '?')}: {info.get('message', '')}"
    print(f"{event.n:>4}  {at}  {text}", flush=True)


def cmd_tasks(args: argparse.Namespace) -> int:
    settings = settings_from(args, client_name="cli", tasks=True)

    async def listing() -> list[Task]:
        async with _runtime(settings) as rt:
            return await rt.tasks.list(args.user)

    tasks = [t for t in run_interruptibly(listing) if not args.state or _state(t) == args.state][: args.limit]
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "taskId": t.id,
                        "agent": t.record.agent,
                        "action": t.record.action,
                        "state": _state(t),
                        "submittedAt": t.record.submitted_at,
                    }
                    for t in tasks
                ]
            )
        )
        return 0
    if not tasks:
        print("no tasks")
        return 0
    print(f"{'TASK':<24} {'AGENT':<16} {'ACTION':<16} {'STATE':<10} SUBMITTED")
    for t in tasks:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t.record.submitted_at / 1000))
        print(f"{t.id:<24} {t.record.agent[:16]:<16} {t.record.action[:16]:<16} {_state(t):<10} {at}")
    return 0


def _state(task: Task) -> str:
    return task.seen.state if task.seen is not None else "running"


def _report(args: argparse.Namespace, outcome: TaskOutcome | None) -> int:
    if outcome is None:
        print(json.dumps({"taskId": args.id, "state": "running"}) if args.json else "running")
        return 0
    if args.json:
        shown: dict[str, Any] = {"taskId": args.id, "state": outcome.state}
        if outcome.error is not None:
            shown["error"] = {"code": outcome.error.code, "message": outcome.error.message}
        else:
            shown["result"] = outcome.result
        print(json.dumps(shown))
        return 1 if outcome.error is not None and args.verb == "wait" else 0
    if outcome.error is None:
        print(json.dumps(outcome.result, indent=2))
        return 0
    from bus.errors import error_from_info

    error = error_from_info(outcome.error)
    if args.verb == "wait":
        raise CommandError(f"{error.code}: {error.message}")
    print(f"{outcome.state}: {error.code}: {error.message}")
    return 0
