"""``a2a call``: one call, its ids and progress on standard error, its result on standard output."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import TYPE_CHECKING, Any

from .common import CommandError, describe_error, run_interruptibly, settings_from

if TYPE_CHECKING:
    from bus.errors import A2AError
    from bus.wire import ResponseEnvelope

    from ..core.route import Target

__all__ = ["MAX_PARAMS_DEPTH", "call_target", "cmd_call", "parse_params"]

MAX_PARAMS_DEPTH = 100
"""Deepest nesting of ``--params`` accepted: far beyond real parameters, far below recursion limits."""
_MAX_ACTION = 256  # the wire's limit on action names
_PROGRESS_CHARS = 2000  # of one progress update shown on a line


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar is 0), without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e400: it would travel as null
        raise ValueError(f"{text} is out of range for a JSON number")
    return value


def _no_surrogates(value: Any) -> Any:
    """``value`` as parsed, refusing half of a surrogate pair (``"\ud800"``) in a string or key:
    valid to ``json``, but no UTF-8 text can carry it."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise ValueError("a string holds half of a surrogate pair") from None
    return value


def parse_params(text: str | None) -> dict[str, Any] | None:
    """``--params`` as a JSON object; CommandError (status 2) when it is anything else."""
    if not text:
        return None
    try:
        params = _no_surrogates(json.loads(text, parse_constant=_no_constant, parse_float=_finite))
    except RecursionError:  # deeper than the parser itself goes
        raise CommandError(f"--params is nested deeper than {MAX_PARAMS_DEPTH} levels", status=2) from None
    except ValueError as exc:  # JSONDecodeError, NaN or Infinity
        raise CommandError(f"--params is not valid JSON: {exc}", status=2) from None
    if not isinstance(params, dict):
        raise CommandError("--params must be a JSON object", status=2)
    if _depth(params) > MAX_PARAMS_DEPTH:
        raise CommandError(f"--params is nested deeper than {MAX_PARAMS_DEPTH} levels", status=2)
    return params


def call_target(args: argparse.Namespace, command: str = "call") -> tuple[Target, str]:
    """Where the call goes and which action, from the positional arguments."""
    from bus.subjects import validate_name

    from ..core.route import by_capability

    positional = list(args.args)
    target: Target
    if args.capability:
        if len(positional) != 1:
            raise CommandError(
                f"usage: a2a {command} --capability CAP [--capability CAP ...] ACTION", status=2
            )
        target, action = by_capability(*args.capability), positional[0]
    else:
        if len(positional) != 2:
            raise CommandError(f"usage: a2a {command} AGENT ACTION [--params JSON]", status=2)
        target, action = validate_name("agent name", positional[0]), positional[1]
    if not 1 <= len(action) <= _MAX_ACTION:
        raise CommandError(f"an action name has 1-{_MAX_ACTION} characters, got {len(action)}", status=2)
    return target, action


class _Shown:
    """What the call prints on standard error while it runs: its ids, then each progress update."""

    def __init__(self, quiet: bool, conversation: str, request: str) -> None:
        self.quiet = quiet
        self.ids = _ids(conversation, request)
        self.started = time.monotonic()
        self.sent = False

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.started:.2f} s"

    def sending(self, target: str, action: str) -> None:
        self.sent = True
        # On a terminal at once, so that a person can follow the call (a2a watch --conversation)
        # while it runs; in a pipe or a log only with the outcome, one line.
        if not self.quiet and sys.stderr.isatty():
            sys.stderr.write(f"calling {target} {action}: {self.ids}\n")
            sys.stderr.flush()

    def progress(self, update: Any) -> None:
        if self.quiet:
            return
        text = json.dumps(update, default=str)
        if len(text) > _PROGRESS_CHARS:
            text = text[: _PROGRESS_CHARS - 1] + "…"
        sys.stderr.write(f"progress ({self.elapsed()}): {text}\n")
        sys.stderr.flush()

    def done(self, response: ResponseEnvelope) -> None:
        if self.quiet:
            return
        usage = response.payload.usage
        tokens = f", {usage.total} tokens" if usage is not None and usage.total else ""
        ids = _ids(response.conversation_id, response.metadata.key)
        sys.stderr.write(f"{response.source_agent_id} answered in {self.elapsed()}{tokens}: {ids}\n")

    def failed(self, error: A2AError) -> Exception:
        """The error, with the call's ids when it was sent (the audit and history know them)."""
        return CommandError(f"{describe_error(error)} [{self.ids}]") if self.sent else error


def _ids(conversation: str, request: str) -> str:
    if conversation == request:  # a new conversation, named after its call
        return f"conversation and request {request}"
    return f"conversation {conversation}  request {request}"


def _target_name(target: Target) -> str:
    return target if isinstance(target, str) else str(target)


def cmd_call(args: argparse.Namespace) -> int:
    from bus.errors import A2AError
    from bus.ids import new_id

    from ..core.options import CallOptions
    from ..core.runtime import Runtime

    target, action = call_target(args)
    params = parse_params(args.params)
    settings = settings_from(args, client_name="cli")
    request = new_id()
    conversation = args.conversation or request
    shown = _Shown(args.quiet or args.json, conversation, request)
    options = CallOptions(
        timeout=args.timeout,
        user_id=args.user,
        conversation_id=conversation,
        budget=args.budget,
        max_hops=args.max_hops,
        request_id=request,
        on_progress=shown.progress,
    )

    async def call() -> ResponseEnvelope:
        async with Runtime(settings) as rt:
            shown.sending(_target_name(target), action)
            return await rt.request(target, action, params, options)

    try:
        response = run_interruptibly(call)
    except A2AError as exc:
        raise shown.failed(exc) from None
    if args.json:
        import msgspec

        print(json.dumps(msgspec.to_builtins(response), indent=2, default=str))
        return 0
    print(json.dumps(response.payload.result, indent=2))
    shown.done(response)
    return 0
