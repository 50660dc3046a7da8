"""``a2a watch``: calls as they start and as they end, the calls still running, and session turns.

A call that runs longer than half a second is announced while it runs (a ``running``
record, :mod:`a2a.core.running`); it prints then, and its end prints with its duration
when its record arrives. Shorter calls print both lines when they end. While calls run,
a line every few seconds says which, and for how long so far::

    planner calling coder with task: write the parser (running, 0.5 s so far)
    running: planner → coder 5.0 s
    coder returned: SUCCESS (120 tokens, 6.20 s)
"""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from .common import CommandError, settings_from

if TYPE_CHECKING:
    from ..console.feed import Event
    from ..console.watch import Watcher, WatchFilter
    from ..stores.audit import AuditRecord

__all__ = ["InFlight", "cmd_watch"]

FORGET_AFTER = 3600.0
"""Seconds after which a call announced running and never seen ending is no longer listed."""
_TEXT = 160


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


@dataclass
class InFlight:
    """The calls announced running and not yet ended, and the lines that say so.

    ``clock`` is monotonic seconds; a call's start is when it was announced less the time it
    had run by then.
    """

    watcher: Watcher
    only: WatchFilter
    clock: Callable[[], float] = time.monotonic
    calls: dict[str, tuple[AuditRecord, float]] = field(default_factory=dict)

    def _now(self) -> float:
        return self.clock()

    def running(self, record: AuditRecord) -> list[str]:
        """Lines for a ``running`` record: the call's first line, once."""
        if record.request_id in self.calls or not self.only.calls(record):
            return []
        self.calls[record.request_id] = (record, self._now() - record.duration_ms / 1000)
        task = _clip(record.objective or record.action)
        return [
            f"{record.origin} calling {record.target} with task: {task}"
            f" (running, {record.duration_ms / 1000:.1f} s so far)"
        ]

    def ended(self, event: Event) -> list[str]:
        """Lines for a feed event: a call announced running prints its first line then (once),
        and only its end when it ends."""
        if event.kind == "call" and event.data.outcome == "running":
            return self.running(event.data) if self.watcher.lines(event) else []
        if event.kind == "call":
            self.calls.pop(event.data.request_id, None)
        return self.watcher.lines(event)

    def still_running(self) -> list[str]:
        """One line naming each call still running, with its time so far; none when none runs."""
        now = self._now()
        for key, (_, started) in list(self.calls.items()):
            if now - started > FORGET_AFTER:
                del self.calls[key]
        if not self.calls:
            return []
        shown = [
            f"{r.origin} → {r.target} {now - started:.1f} s"
            for r, started in sorted(self.calls.values(), key=lambda call: call[1])
        ]
        return ["running: " + "; ".join(shown)]


def cmd_watch(args: argparse.Namespace) -> int:
    from ..console.feed import Feed
    from ..console.watch import Watcher, WatchFilter
    from ..core.runtime import Runtime
    from ..sessions.store import SessionStore

    settings = settings_from(args)
    if not settings.redis_url:
        raise CommandError("needs Redis for session events: set REDIS_URL or --redis-url", status=2)
    only = WatchFilter(args.conversation, args.agent, args.user)
    flight = InFlight(Watcher(only), only)

    def say(lines: list[str]) -> None:
        for line in lines:
            print(line, flush=True)

    async def run() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with Runtime(settings) as runtime, anyio.create_task_group() as tg:
                assert runtime.registry is not None
                feed = Feed(runtime, SessionStore(runtime.registry.redis, settings.namespace))

                with feed.listen() as events:
                    await tg.start(feed.run)
                    print(f"watching namespace {settings.namespace!r} (Ctrl-C stops)", flush=True)

                    async def show() -> None:
                        async for event in events:
                            say(flight.ended(event))

                    async def tick() -> None:
                        while True:
                            await anyio.sleep(args.every)
                            say(flight.still_running())

                    tg.start_soon(show)
                    tg.start_soon(tick)
                    async for _ in signals:
                        break
                    tg.cancel_scope.cancel()

    anyio.run(run)
    return 0
