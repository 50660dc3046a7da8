"""A session process that dies mid-call gives its shared-call slot back within seconds.

The session runs in its own process (``a2a session start``), sending to a remote agent
served by the test's runtime that takes a minute to answer; the process is SIGKILLed while
it holds the profile's only concurrent slot.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.errors import Overloaded
from a2a.sessions import Sessions, SharedCallPolicy
from a2a.stdio import StdioPeer
from tests.helpers import ROOT, agent_env
from tests.sessions.conftest import FAST, SCRIPTS, Received, remote_agents

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

USER = "carol"
ONE_AT_A_TIME = SharedCallPolicy(
    allow_shared_agent_calls=True, allowed_shared_device_ids=["remote"], max_concurrent_shared_calls=1
)
FREED_WITHIN = 10.0
"""Seconds after the kill by which the slot must be free (the lease is 6 s, renewed every 2 s)."""


async def test_a_killed_session_process_frees_its_slot_within_seconds(settings: Settings) -> None:
    peer = StdioPeer("drafter", [sys.executable, str(SCRIPTS / "drafter.py")], config=FAST)
    received: list[Received] = []
    async with Runtime(settings) as rt, Sessions(rt) as sessions:
        await rt.serve(peer.agent(), *remote_agents(received, delay=60.0))
        await sessions.set_policy(USER, "drafter", ONE_AT_A_TIME)
        proc = await anyio.open_process(
            [
                sys.executable,
                "-m",
                "a2a",
                "session",
                "start",
                "drafter",
                "remote",
                "hi",
                "--mode",
                "full_auto",
            ],
            env=agent_env(settings, A2A_USER=USER),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with anyio.fail_after(20):
                while not received:  # the session process sends, and holds the one slot
                    assert proc.returncode is None, "the session process ended early"
                    await anyio.sleep(0.05)
            with pytest.raises(Overloaded):
                async with sessions.policies.admit(ONE_AT_A_TIME, USER, "drafter", "remote"):
                    pass
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        killed = time.monotonic()
        with anyio.fail_after(FREED_WITHIN + 3):
            while True:
                try:
                    async with sessions.policies.admit(ONE_AT_A_TIME, USER, "drafter", "remote"):
                        break
                except Overloaded:
                    await anyio.sleep(0.1)
        freed = time.monotonic() - killed
        print(f"slot freed {freed:.1f} s after the session process was killed")
        assert freed <= FREED_WITHIN
