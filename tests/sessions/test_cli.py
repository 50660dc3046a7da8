"""``a2a session`` in its own processes: set a policy, run a session to its end, steer one from
another process, list and show them; bad input gets a clear error, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.stdio import StdioPeer
from tests.helpers import ROOT, agent_env
from tests.sessions.conftest import FAST, SCRIPTS, remote_agents

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def a2a(settings: Settings, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a2a", *args],
        env=agent_env(settings, A2A_USER="carol"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


async def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return await anyio.to_thread.run_sync(lambda: a2a(settings, "session", *args))


async def test_a_session_from_the_command_line(settings: Settings) -> None:
    peer = StdioPeer("drafter", [sys.executable, str(SCRIPTS / "drafter.py")], config=FAST)
    async with Runtime(settings) as rt:
        await rt.serve(peer.agent(), *remote_agents([]))
        denied = await cli(settings, "start", "drafter", "remote", "hi", "--mode", "full_auto")
        assert denied.returncode != 0 and "allowSharedAgentCalls is off" in denied.stderr
        assert "Traceback" not in denied.stderr
        policy = await cli(settings, "policy", "drafter", "--allow", "remote")
        assert policy.returncode == 0 and "drafter may send to: remote" in policy.stdout
        done = await anyio.to_thread.run_sync(
            lambda: a2a(
                settings,
                "session",
                "start",
                "drafter",
                "remote",
                "hi",
                "--mode",
                "full_auto",
                "--max-turns",
                "2",
            )
        )
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].startswith("session sess_") and "started" in lines[0]
        assert sum(": Local Agent (auto-sent): draft" in line for line in lines) == 2
        assert sum(": Remote Agent: reply" in line for line in lines) == 2
        assert "stopped: 2 messages sent: maxTurns is 2" in lines[-1]
        session_id = lines[0].split()[1]
        listed = await cli(settings, "list")
        assert session_id in listed.stdout and "stopped" in listed.stdout
        shown = await cli(settings, "show", session_id)
        assert "[0] local_agent (auto-sent): draft 0 on 'hi'" in shown.stdout
        assert "ended: limit maxTurns" in shown.stdout
        again = await cli(settings, "resume", session_id)
        assert (
            again.returncode != 0
            and "Traceback" not in again.stderr
            and "stopped, not paused" in again.stderr
        )
        nobody = await cli(settings, "show", "sess_nope")
        assert (
            nobody.returncode != 0
            and "no session sess_nope" in nobody.stderr
            and "Traceback" not in nobody.stderr
        )
