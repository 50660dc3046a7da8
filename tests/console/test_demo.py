"""The README's two-line start: ``a2a console --demo`` on embedded servers, which it prints the
URLs of, a session between the stdio drafter and the bus agent reviewer that runs to the
reviewer's approval."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from a2a.dev.servers import die_with_parent
from tests.helpers import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.slow]


def start_console(log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL", "A2A_NAMESPACE")}
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "a2a", "console", "--demo", "--port", "0"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )


async def test_the_demo_console_runs_a_session_to_the_reviewers_approval(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    proc = start_console(log)
    try:
        with anyio.fail_after(60):
            while not (found := re.search(rb"A2A console on (http://\S+)/", log.read_bytes())):
                assert proc.poll() is None, log.read_text()
                await anyio.sleep(0.1)
        url = found.group(1).decode()
        printed = log.read_text()  # the servers' URLs, then the console's
        assert re.search(r"^NATS   nats://127\.0\.0\.1:\d+$", printed, re.M), printed
        assert re.search(r"^Redis  redis://127\.0\.0\.1:\d+", printed, re.M), printed
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            start = {
                "local": "drafter",
                "remote": "reviewer",
                "objective": "review the API",
                "mode": "full_auto",
            }
            r = await client.post("/api/sessions", json=start)
            assert r.status_code == 201, r.text
            with anyio.fail_after(30):
                while (s := (await client.get(f"/api/sessions/{r.json()['id']}")).json())[
                    "state"
                ] != "completed":
                    assert s["state"] not in ("error", "stopped"), s
                    await anyio.sleep(0.2)
        assert s["turns"][-1]["text"].startswith("APPROVED")
        assert s["ending"] == {
            "kind": "done",
            "message": "the local agent has nothing more to send",
            "limit": None,
        }
    finally:
        proc.terminate()
        assert proc.wait(20) == 0, log.read_text()
