"""The project's own static checks: ruff (lint and format) and mypy --strict."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # At a lower priority: the checks share the machine with the other worker's timed tests.
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.nice(10),
    )


def test_ruff_is_clean() -> None:
    lint = run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@pytest.mark.timeout(300)  # a first run, without mypy's cache, checks every imported package
def test_mypy_is_clean() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
