"""The `a2a` command line, run as users run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from a2a import Settings
from tests.helpers import ROOT, AgentProcess, agent_env

pytestmark = pytest.mark.integration


def a2a(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a2a", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def echo_process(settings: Settings) -> AgentProcess:
    with AgentProcess(settings, "tests.agents:echo") as proc:
        env = agent_env(settings)
        for _ in range(200):
            if "echo" in a2a("agents", env=env).stdout:
                break
        yield proc


def test_call_prints_the_result(settings: Settings, echo_process: AgentProcess) -> None:
    out = a2a("call", "echo", "echo", "--params", '{"a": [1, 2]}', env=agent_env(settings))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"a": [1, 2]}
    routed = a2a("call", "--capability", "text", "whoami", env=agent_env(settings))
    assert routed.returncode == 0, routed.stderr
    assert json.loads(routed.stdout)["pid"] == echo_process.pid


def test_call_prints_the_typed_error_and_exits_non_zero(
    settings: Settings, echo_process: AgentProcess
) -> None:
    out = a2a("call", "echo", "sleep", "--params", '{"seconds": "x"}', env=agent_env(settings))
    assert out.returncode == 1
    assert out.stderr.startswith("a2a call: INVALID_PARAMS: ") and out.stderr.count("\n") == 1
    assert "$.seconds" in out.stderr and "agent echo" in out.stderr
    out = a2a("call", "nobody", "x", "--timeout", "5", env=agent_env(settings))
    assert out.returncode == 1 and out.stderr.startswith("a2a call: NO_RESPONDERS: ")
    out = a2a("call", "echo", "echo", "--params", "[1]", env=agent_env(settings))
    assert out.returncode == 2 and out.stderr == "a2a call: --params must be a JSON object\n"


def test_agents_lists_the_registry(settings: Settings, echo_process: AgentProcess) -> None:
    out = a2a("agents", env={**agent_env(settings), "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "echo-" in line)
    assert "echo(0.5), text(0.7)" in line and "available" in line and "0/8" in line


def _children_left(before: set[int]) -> list[str]:
    me = psutil.Process()
    return [p.name() for p in me.children(recursive=True) if p.pid not in before]


def test_demo_on_the_embedded_default_shows_the_hop_timeline_and_cleans_up() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL")}
    env["COLUMNS"] = "200"
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    out = a2a("demo", env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "started nats-server" in text
    for hop in (
        "user → planner",
        "planner → reader",
        "planner → writer",
        "writer → reader",
        "planner → reviewer",
        "reviewer → writer",  # the fix the review asked for
        "planner → docs",
        "planner → scribe",
        "scribe → reader",
    ):
        assert hop in text, hop
    loop = text[text.index("Review loop") :]
    fail, fix, passed = (loop.index(word) for word in ("FAIL restock", "reviewer → writer: fix", "PASS"))
    assert fail < fix < passed
    assert '"""Restock from items, name and qty; None when nothing matches."""' in text
    assert "codebase-index.md, written by the scribe" in text and "| inventory.py |" in text
    assert "[by capability code.edit]" in text
    assert '"status": "done"' in text
    assert '"""Total price from items."""' in text
    assert "stopped every process and server it started" in text
    assert _children_left(before) == []


def test_the_console_script_imports_agents_from_the_folder_it_runs_in(tmp_path: Path) -> None:
    """`a2a ... --agents mymod:agent` run from mymod.py's own folder imports it (as
    `python -m` and uvicorn do), without PYTHONPATH; from elsewhere it says why not."""
    folder = tmp_path
    (folder / "mymod.py").write_text(
        "from a2a import Agent\nagent = Agent('echo')\n\n"
        "@agent.action('echo')\nasync def echo(ctx, params):\n    return params\n"
    )
    (folder / "roster.yaml").write_text("agents:\n  echo:\n    mode: read\n")
    script = Path(sys.executable).parent / "a2a"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    argv = [str(script), "nats-config", "--roster", str(folder / "roster.yaml"), "--agents", "mymod:agent"]
    here = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=60)
    assert here.returncode == 0, here.stderr
    assert "echo" in here.stdout
    elsewhere = subprocess.run(argv, cwd=folder.parent, env=env, capture_output=True, text=True, timeout=60)
    assert elsewhere.returncode == 2 and "cannot import 'mymod'" in elsewhere.stderr
