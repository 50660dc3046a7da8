"""``a2a watch`` shows calls as they start, the calls still running and how each ended;
``a2a history`` lists the conversations those calls were in."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers import ROOT, AgentProcess, wait_until

from .conftest import a2a

pytestmark = pytest.mark.integration


class Watching:
    """``a2a watch`` in a process; ``lines`` are what it printed so far."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "a2a", "watch", *args],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(20)


@pytest.fixture
def watching(stepper: AgentProcess, cli_env: dict[str, str]) -> Iterator[Watching]:
    watch = Watching(cli_env, "--every", "0.3")
    try:
        wait_until(lambda: any(line.startswith("watching namespace") for line in watch.lines), timeout=30)
        yield watch
    finally:
        if watch.proc.poll() is None:
            watch.proc.kill()
            watch.proc.wait(10)


def test_watch_shows_a_long_call_as_it_starts_runs_and_ends(
    watching: Watching, cli_env: dict[str, str]
) -> None:
    params = '{"steps": 5, "pause": 0.4}'
    call = subprocess.Popen(
        [sys.executable, "-m", "a2a", "call", "stepper", "walk", "--params", params, "-q"],
        env=cli_env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    started = "cli calling stepper with task: walk (running, "
    wait_until(lambda: any(line.startswith(started) for line in watching.lines), timeout=20)
    assert call.poll() is None  # announced while it runs
    wait_until(lambda: any(line.startswith("running: cli → stepper ") for line in watching.lines), timeout=20)
    assert call.wait(30) == 0
    wait_until(
        lambda: any(line.startswith("stepper returned: SUCCESS") for line in watching.lines), timeout=20
    )
    quick = a2a("call", "stepper", "echo", "-q", env=cli_env)
    assert quick.returncode == 0, quick.stderr
    wait_until(lambda: "cli calling stepper with task: echo" in watching.lines, timeout=20)
    time.sleep(0.5)
    assert watching.stop() == 0
    lines = watching.lines
    walk = [i for i, line in enumerate(lines) if "with task: walk" in line]
    assert len(walk) == 1, lines  # the start of the call, once
    ended = next(i for i, line in enumerate(lines) if line.startswith("stepper returned: SUCCESS"))
    running = [i for i, line in enumerate(lines) if line.startswith("running: ")]
    assert walk[0] < running[0] < ended, lines
    seconds = float(lines[ended].split(", ")[-1].removesuffix(" s)"))
    assert seconds >= 1.5  # five pauses of 0.4 s
    echo = lines.index("cli calling stepper with task: echo")
    assert lines[echo + 1].startswith("stepper returned: SUCCESS")
    assert all(not line.startswith("running: ") for line in lines[ended:]), lines  # nothing runs any more


def test_history_lists_recent_conversations(stepper: AgentProcess, cli_env: dict[str, str]) -> None:
    for conversation in ("conv-older", "conv-newer"):
        out = a2a(
            "call", "stepper", "echo", "--conversation", conversation, "--params", '{"n": 1}', env=cli_env
        )
        assert out.returncode == 0, out.stderr
        time.sleep(0.05)

    def listed() -> list[str]:
        return [line for line in a2a("history", env=cli_env).stdout.splitlines() if "conv-" in line]

    wait_until(lambda: len(listed()) == 2, timeout=20)  # the agent writes its history after answering
    newer, older = listed()
    assert "conv-newer" in newer and "conv-older" in older
    assert "echo" in newer  # the goal: the first request
    one = a2a("history", "conv-newer", env=cli_env)
    assert one.returncode == 0 and "conversation conv-newer" in one.stdout, one.stderr
    limited = a2a("history", "--limit", "1", env=cli_env)
    assert "conv-newer" in limited.stdout and "conv-older" not in limited.stdout
