"""What the commands share: consoles, settings from arguments, loading agents, argument types.

Importing this module costs next to nothing: the parser of every command uses it, and
``a2a --help`` must answer at once. What a command needs from the runtime is imported
when the command runs (or when an argument that needs it is checked).
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from bus.errors import A2AError

    from ..core.agent import Agent
    from ..core.settings import Settings

__all__ = [
    "MAX_SECONDS",
    "CommandError",
    "capability_id",
    "describe_error",
    "integer",
    "lazy",
    "load_agents",
    "nats_url",
    "port",
    "redis_url",
    "seconds",
    "settings_from",
    "sizes",
    "subject_token",
]

MAX_SECONDS = 7 * 24 * 3600.0
"""Longest timeout a command accepts: ``a2a.core.settings.MAX_SECONDS``, without importing it."""

_consoles: dict[str, Console] = {}


def __getattr__(name: str) -> Console:
    """``console`` and ``err_console``: rich consoles, made (and rich imported) on first use."""
    if name not in ("console", "err_console"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _consoles:
        from rich.console import Console

        # Piped output (CI logs, `| less`) gets a width that fits the timeline instead of rich's 80.
        width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 140
        _consoles[name] = Console(stderr=name == "err_console", width=width)
    return _consoles[name]


class CommandError(Exception):
    """A failure the command explains in one line; ``status`` is the exit status.

    Status 2 means the arguments or the environment are wrong, 1 that running failed.
    """

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


T = TypeVar("T")


def describe_error(exc: A2AError) -> str:
    """A typed error in one line: ``CODE: message (at agent X, hop N; details {...})``."""
    import json

    where = [f"agent {exc.agent}" if exc.agent else "", f"hop {exc.hop}" if exc.hop is not None else ""]
    context = [f"at {', '.join(w for w in where if w)}" if any(where) else ""]
    if exc.details:
        context.append(f"details {json.dumps(exc.details, default=str)}")
    suffix = "; ".join(c for c in context if c)
    return f"{exc.code}: {exc.message}" + (f" ({suffix})" if suffix else "")


def lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of ``a2a.cli.<module>``, imported when the command runs."""

    def command(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(f"{__package__}.{module}"), name)(args))

    command.__name__ = command.__qualname__ = name
    return command


def run_interruptibly(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` on an event loop; Ctrl-C or SIGTERM cancels it and raises KeyboardInterrupt.

    The signal cancels an anyio scope, which stays cancelled: every later wait inside it is
    cancelled again, so a library that swallows one cancellation (a connect in progress,
    say) cannot keep the command waiting for its own timeout. What ``work`` raises is
    raised as it is (not inside an exception group).
    """
    import anyio

    results: list[T] = []
    errors: list[Exception] = []
    interrupted = False

    async def main() -> None:
        nonlocal interrupted
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    nonlocal interrupted
                    async for _ in signals:
                        interrupted = True
                        tg.cancel_scope.cancel()
                        return

                async def run() -> None:
                    try:
                        results.append(await work())
                    except Exception as exc:
                        errors.append(exc)
                    finally:
                        tg.cancel_scope.cancel()

                tg.start_soon(watch)
                tg.start_soon(run)

    anyio.run(main)
    if interrupted:
        raise KeyboardInterrupt
    if errors:
        raise errors[0]
    return results[0]


def settings_from(args: argparse.Namespace, **extra: Any) -> Settings:
    """Settings from the command's connection options, then the environment, then the dev
    cluster file of a running ``a2a up``, then the defaults; a default server in use is named
    on standard error.

    Raises:
        ValueError: a setting (or the dev cluster file) is invalid; the message names it.
    """
    from .servers import resolve_settings

    return resolve_settings(args, **extra)


def _import(module_name: str) -> object:
    """The module, or a CommandError saying why it cannot be imported."""
    if (
        os.getcwd() not in sys.path and "" not in sys.path
    ):  # as `python -m` and uvicorn: the folder it runs in
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"cannot import {module_name!r}: {exc}", status=2) from exc
    except Exception as exc:  # the module's own code failed while importing
        raise CommandError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") from exc


def _agents_of(target: str, obj: object) -> list[Agent]:
    """``obj`` as a list of Agents: an Agent, or a list or tuple of them."""
    from ..core.agent import Agent

    found = [obj] if isinstance(obj, Agent) else list(obj) if isinstance(obj, list | tuple) else []
    if not found or not all(isinstance(a, Agent) for a in found):
        raise CommandError(f"{target} is neither an Agent nor a non-empty list of Agents", status=2)
    return found


def load_agents(targets: Sequence[str]) -> list[Agent]:
    """The Agents that ``module:attribute`` targets name.

    Raises:
        CommandError: a target is malformed, does not import, or names something else.
    """
    agents: list[Agent] = []
    for target in targets:
        module_name, _, attr = target.partition(":")
        if not module_name or not attr:
            raise CommandError(f"expected module:attribute, got {target!r}", status=2)
        module = _import(module_name)
        if not hasattr(module, attr):
            raise CommandError(f"module {module_name!r} has no attribute {attr!r}", status=2)
        agents.extend(_agents_of(target, getattr(module, attr)))
    return agents


# argparse types: each parses one argument or raises ArgumentTypeError with the reason,
# which argparse reports as "argument --x: <reason>" with exit status 2.


def seconds(text: str) -> float:
    """A finite number of seconds above 0 and at most a week."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds above 0 and at most {MAX_SECONDS:g}, got {text!r}"
        )
    return value


def integer(low: int, high: int) -> Callable[[str], int]:
    """A parser of whole numbers from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low} to {high}, got {text!r}")
        return value

    return parse


def sizes(text: str) -> tuple[int, ...]:
    """Comma-separated instance counts, each from 1 to 1,000,000."""
    count = integer(1, 1_000_000)
    parts = [part.strip() for part in text.split(",")]
    if not 1 <= len(parts) <= 10:
        raise argparse.ArgumentTypeError(f"expected 1 to 10 comma-separated sizes, got {text!r}")
    return tuple(count(part) for part in parts)


port = integer(1, 65535)


def _checked(check: Callable[[str], str]) -> Callable[[str], str]:
    """An argparse type from a check that raises ValueError."""

    def parse(text: str) -> str:
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _check_nats_url(text: str) -> str:
    from ..core.settings import check_nats_url

    return check_nats_url(text)


def _check_redis_url(text: str) -> str:
    from ..core.settings import check_redis_url

    return check_redis_url(text)


nats_url = _checked(_check_nats_url)
redis_url = _checked(_check_redis_url)


def subject_token(kind: str) -> Callable[[str], str]:
    """A parser of names that become one subject token (namespaces, agent names)."""

    def check(text: str) -> str:
        from bus.subjects import validate_name

        return validate_name(kind, text)

    return _checked(check)


def _check_capability(text: str) -> str:
    from discovery.profile import validate_capability_id

    return validate_capability_id(text)


capability_id = _checked(_check_capability)
