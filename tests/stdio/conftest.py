"""Serving the test programs of ``scripts/`` as stdio agents on a real runtime, with short timeouts."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from a2a import Runtime, Settings
from a2a.stdio import ProcessInfo, StdioConfig, StdioPeer

SCRIPTS = Path(__file__).resolve().parent / "scripts"
FAST = StdioConfig(
    timeout=3.0,
    tool_timeout=5.0,
    grace=0.3,
    close_grace=0.3,
    backoff_first=0.05,
    backoff_max=0.4,
)
"""Seconds instead of minutes, so the faults show quickly."""


def command(script: str = "agent.py") -> list[str]:
    return [sys.executable, str(SCRIPTS / script)]


@asynccontextmanager
async def serving(
    settings: Settings,
    script: str = "agent.py",
    *,
    pool: int = 1,
    config: StdioConfig = FAST,
    env: Mapping[str, str] | None = None,
    name: str = "local",
) -> AsyncIterator[tuple[Runtime, StdioPeer]]:
    """A runtime serving ``script`` as the stdio agent ``name`` (and calling it)."""
    peer = StdioPeer(name, command(script), pool=pool, config=config, env=env)
    async with Runtime(settings) as rt:
        await rt.serve(peer.agent(capabilities=["test.stdio"], description="a test program"))
        yield rt, peer


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``condition`` until it holds (AssertionError after ``timeout`` seconds)."""
    with anyio.move_on_after(timeout):
        while not condition():
            await anyio.sleep(0.02)
    assert condition(), "the condition did not come true in time"


def ready(peer: StdioPeer, count: int = 1) -> Callable[[], bool]:
    """Whether ``count`` processes of ``peer`` are ready for a request."""
    return lambda: sum(p.state == "ready" for p in peer.processes()) >= count


def pids(peer: StdioPeer) -> list[int | None]:
    return [p.pid for p in peer.processes()]


__all__ = ["FAST", "SCRIPTS", "ProcessInfo", "command", "pids", "ready", "serving", "until"]
