"""A console served over a runtime with the stdio drafter of the session tests and a remote
bus agent, on real servers, on a free port."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.console import ConsoleAuth, serve_console
from a2a.console.links import Jaeger
from a2a.sessions import Sessions, SharedCallPolicy
from a2a.stdio import StdioPeer
from tests.sessions.conftest import FAST, SCRIPTS, Received, remote_agents

POLICY = SharedCallPolicy(allow_shared_agent_calls=True, allowed_shared_device_ids=["remote"])


@dataclass
class Console:
    url: str
    rt: Runtime
    sessions: Sessions
    received: list[Received]


@pytest.fixture
def auth() -> ConsoleAuth:
    return ConsoleAuth("local")


@pytest.fixture
def jaeger() -> Jaeger | None:
    """Where calls link to their traces (none by default)."""
    return None


@pytest.fixture
async def console(
    settings: Settings, auth: ConsoleAuth, jaeger: Jaeger | None, tmp_path: Path
) -> AsyncIterator[Console]:
    peer = StdioPeer("drafter", [sys.executable, str(SCRIPTS / "drafter.py")], config=FAST)
    received: list[Received] = []
    async with (
        Runtime(settings) as rt,
        Sessions(rt) as sessions,
        anyio.create_task_group() as tg,
    ):
        await rt.serve(peer.agent(capabilities=["drafting"]), *remote_agents(received, 0.3))
        for user in ("local", "alice", "bob"):
            await sessions.set_policy(user, "drafter", POLICY)
        port = await tg.start(partial(serve_console, rt, sessions, port=0, auth=auth, jaeger=jaeger))
        yield Console(f"http://127.0.0.1:{port}", rt, sessions, received)
        tg.cancel_scope.cancel()
