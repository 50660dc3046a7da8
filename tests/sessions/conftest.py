"""A runtime serving the stdio drafter (``scripts/drafter.py``) as the local agent, plain bus
agents as remote ones, and the sessions of that runtime, on real servers."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.sessions import Session, Sessions, SharedCallPolicy
from a2a.stdio import StdioConfig, StdioPeer

SCRIPTS = Path(__file__).resolve().parent / "scripts"
FAST = StdioConfig(
    timeout=3.0, tool_timeout=5.0, grace=0.3, close_grace=0.3, backoff_first=0.05, backoff_max=0.4
)
USER = "alice"
ALLOWED = SharedCallPolicy(
    allow_shared_agent_calls=True, allowed_shared_device_ids=["remote", "relay1", "stranger", "spender"]
)


@dataclass
class Received:
    text: str
    conversation: str
    user: str | None
    hop: int
    orchestration: dict[str, Any] | None = None
    """The control metadata the message came with (outside its text)."""
    withdrawn: bool = False
    """The caller withdrew the call while the agent answered."""


@dataclass
class Bench:
    rt: Runtime
    sessions: Sessions
    frames_file: Path
    received: list[Received] = field(default_factory=list)
    """What the remote agent ``remote`` got, in order."""

    def frames(self) -> list[dict[str, Any]]:
        """The request frames the drafter got."""
        if not self.frames_file.exists():
            return []
        return [json.loads(line) for line in self.frames_file.read_text().splitlines()]

    async def start(self, objective: str = "review this API", **options: Any) -> Session:
        options.setdefault("remote", "remote")
        return await self.sessions.start(user_id=USER, profile_id="drafter", objective=objective, **options)

    async def wait(self, session: Session, *states: str, timeout: float = 15.0) -> Session:
        return await self.sessions.wait(session.id, USER, *states, timeout=timeout)


def remote_agents(received: list[Received], delay: float = 0.0) -> list[Agent]:
    """``remote`` answers each message; ``relay1`` and ``relay2`` pass it on down to ``remote``."""
    remote = Agent("remote")

    @remote.action("run")
    async def reply(ctx: Context, params: dict[str, Any]) -> str:
        text = str(params.get("text", ""))
        control = ctx.request.orchestration
        seen = None if control is None else msgspec.to_builtins(control)
        got = Received(text, ctx.conversation_id, ctx.user_id, ctx.hop, seen)
        received.append(got)
        try:
            await anyio.sleep(delay)
        except anyio.get_cancelled_exc_class():
            got.withdrawn = True
            raise
        return f"reply {len(received)} to: {text[:40]}"

    relays = []
    for name, nxt in (("relay1", "relay2"), ("relay2", "remote")):
        relay = Agent(name)

        async def forward(ctx: Context, params: dict[str, Any], nxt: str = nxt) -> Any:
            return await ctx.call(nxt, "run", params)

        relay.action("run")(forward)
        relays.append(relay)
    spender = Agent("spender")

    @spender.action("run")
    async def spend(ctx: Context, params: dict[str, Any]) -> str:
        ctx.report_usage(400, 100)  # more than a small budget leaves it
        return "an answer that cost 500 tokens"

    return [remote, *relays, spender]


@pytest.fixture
def remote_delay() -> float:
    return 0.0


@pytest.fixture
async def bench(
    settings: Settings, tmp_path: Path, remote_delay: float, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Bench]:
    frames = tmp_path / "frames.ndjson"
    peer = StdioPeer(
        "drafter",
        [sys.executable, str(SCRIPTS / "drafter.py")],
        config=FAST,
        env={"SESSION_FRAMES": str(frames)},
    )
    received: list[Received] = []
    async with Runtime(settings) as rt:
        await rt.serve(peer.agent(capabilities=["drafting"]), *remote_agents(received, remote_delay))
        async with Sessions(rt, lease=1.0) as sessions:
            await sessions.set_policy(USER, "drafter", ALLOWED)
            yield Bench(rt, sessions, frames, received)
