"""The ``a2a`` command run as a user runs it: a process of its own, with an environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a import Settings
from tests.helpers import ROOT, AgentProcess, agent_env


def a2a(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a2a", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The process's environment without servers, with a dev cluster file of the test's own."""
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL", "A2A_NAMESPACE")}
    env["A2A_DEV_FILE"] = str(tmp_path / "dev.env")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env.update(extra)
    return env


@pytest.fixture
def cli_env(settings: Settings, tmp_path: Path) -> dict[str, str]:
    """An environment naming the test's servers and namespace, and no dev cluster."""
    return agent_env(settings, A2A_DEV_FILE=str(tmp_path / "dev.env"), COLUMNS="250")


@pytest.fixture
def stepper(settings: Settings, cli_env: dict[str, str]) -> Iterator[AgentProcess]:
    """``tests.cli.agents:stepper`` served in a process, once the registry lists it."""
    with AgentProcess(settings, "tests.cli.agents:stepper") as proc:
        for _ in range(200):
            if "stepper-" in a2a("agents", env=cli_env).stdout:
                break
        else:
            raise AssertionError(proc.output())
        yield proc
