"""``a2a watch`` in its own process, printing calls, delegations and session turns as they happen."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.sessions import Limits, Sessions
from a2a.stdio import StdioPeer
from tests.helpers import ROOT, agent_env
from tests.sessions.conftest import ALLOWED, FAST, SCRIPTS, remote_agents

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def planner() -> Agent:
    agent = Agent("planner")

    @agent.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        ctx.authorize_tool("linter")
        await ctx.call("remote", "run", {"text": "first"})
        ctx.authorize_tool("tests")
        ctx.authorize_tool("linter")  # listed once
        await ctx.call("remote", "run", {"text": "second"})
        ctx.report_usage(prompt=30, completion=12)
        return "planned"

    return agent


def start_watch(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "a2a", "watch", "--user", "alice"],
            env=agent_env(settings),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def test_watch_prints_calls_with_their_tools_and_session_turns(
    settings: Settings, tmp_path: Path
) -> None:
    log = tmp_path / "watch.log"
    watch = start_watch(settings, log)
    try:
        with anyio.fail_after(20):
            while b"watching namespace" not in log.read_bytes():
                await anyio.sleep(0.05)
        peer = StdioPeer("drafter", [sys.executable, str(SCRIPTS / "drafter.py")], config=FAST)
        async with Runtime(settings) as rt, Sessions(rt) as sessions:
            await rt.serve(peer.agent(), planner(), *remote_agents([]))
            await rt.call("planner", "run", {}, user_id="alice")
            await rt.call("planner", "run", {}, user_id="bob")  # filtered out: not alice's
            await sessions.set_policy("alice", "drafter", ALLOWED)
            s = await sessions.start(
                user_id="alice", profile_id="drafter", remote="remote", objective="o", mode="full_auto",
                limits=Limits(max_turns=1),
            )  # fmt: skip
            await sessions.wait(s.id, "alice", "stopped")
            with anyio.fail_after(10):
                while b"stopped" not in log.read_bytes():
                    await anyio.sleep(0.05)
    finally:
        watch.terminate()
        assert watch.wait(10) == 0
    lines = log.read_text().splitlines()
    assert "client calling planner with task: run" in lines
    done = lines.index("client calling planner with task: run")
    assert lines[done + 1].startswith("planner returned: SUCCESS (42 tokens, ")
    # The tools the planner used, not the agents it called (those print as calls of their own).
    assert lines[done + 2] == "Tools used: linter, tests"
    assert "planner calling remote with task: run" in lines
    assert not any(line.startswith("Tools used:") and "remote" in line for line in lines)
    assert lines.count("client calling planner with task: run") == 1  # bob's call is not shown
    head = f"session {s.id} [drafter -> remote, full_auto]"
    assert f"{head} turn 0: Local Agent (auto-sent): draft 0 on 'o'; the remote said:" in lines
    assert any(line.startswith(f"{head} turn 1: Remote Agent: reply ") for line in lines)
    assert any(line.startswith(f"{head} stopped: 1 messages sent") for line in lines)
