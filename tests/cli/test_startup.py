"""The command starts at once: parsing and ``--help`` import nothing of the runtime, and the
public API is imported on first use, as typed as before."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import a2a
from a2a.cli.common import MAX_SECONDS
from a2a.core import settings as settings_module
from tests.helpers import ROOT

HEAVY = ("bus", "discovery", "transports", "nats", "redis", "rich", "msgspec", "opentelemetry", "aiohttp")


def _imported_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return [m for m in json.loads(out.stdout.splitlines()[-1]) if m.split(".")[0] in HEAVY]


def test_the_parser_imports_nothing_of_the_runtime() -> None:
    assert _imported_after("import a2a") == []
    assert _imported_after("from a2a.cli.main import build_parser; build_parser()") == []


def test_the_public_api_is_there_on_first_use() -> None:
    assert "bus" in _imported_after("from a2a import Runtime")  # imported with what it needs
    for name in a2a.__all__:
        assert getattr(a2a, name) is not None, name
    assert set(a2a.__all__) <= set(dir(a2a))
    assert a2a.wire.__name__ == "a2a.wire"  # a sub-module, as before
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        a2a.nope  # noqa: B018
    import a2a.core as core

    assert core.Runtime is a2a.Runtime and core.AgentHost.__name__ == "AgentHost"


def test_help_is_complete_and_quick() -> None:
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "a2a", "call", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert time.monotonic() - started < 5.0  # a loose bound: about 0.05 s on a quiet machine
    assert out.returncode == 0
    for option in ("--json", "--budget", "--max-hops", "--conversation", "--quiet", "--nats-url"):
        assert option in out.stdout, option
    assert "a2a up" in out.stdout  # where the servers come from


def test_the_commands_share_the_settings_limits() -> None:
    assert MAX_SECONDS == settings_module.MAX_SECONDS
