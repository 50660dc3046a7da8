"""The example a user copies: a LangGraph planner, a pydantic-ai coder and a stdio reviewer,
each in its own process, driven by one command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from a2a import Settings
from tests.helpers import ROOT, agent_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_review_pipeline_example_runs_across_three_frameworks(settings: Settings) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "review_pipeline" / "run.py"), "Merge two sorted lists"],
        env={**agent_env(settings), "COLUMNS": "200"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    # The first draft has no docstring; the reviewer asks for one; the second is approved.
    assert "after 2 round(s), the reviewer said: APPROVED" in out
    assert '"""Merge two sorted lists."""' in out
    assert "planner → coder  [by capability code.write]" in out and "planner → reviewer" in out
