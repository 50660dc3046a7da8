"""``a2a up`` and its dev cluster file: written while it runs, read by every command and by
``Settings.from_env()`` where the environment names no NATS server, gone when it stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a import Settings
from a2a.core.settings import read_dev_cluster
from tests.helpers import ROOT, wait_until

from .conftest import a2a, clean_env

pytestmark = pytest.mark.integration


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def up(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A running ``a2a up`` whose file is ``tmp_path/dev.env``."""
    env = clean_env(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "a2a", "up"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    file = tmp_path / "dev.env"
    try:
        wait_until(file.exists, timeout=30)
        yield proc, file
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(20)


def test_every_command_uses_the_servers_of_a2a_up(
    up: tuple[subprocess.Popen[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, file = up
    found = read_dev_cluster({"A2A_DEV_FILE": str(file)})
    assert found is not None and found.running and found.pid == proc.pid
    assert found.values["NATS_URL"].startswith("nats://127.0.0.1:") and found.values["A2A_OPEN"] == "1"
    # A command in another terminal, with nothing in its environment, uses them, and says nothing about it.
    env = clean_env(tmp_path)
    agents = a2a("agents", env=env)
    assert agents.returncode == 0 and agents.stderr == "", agents.stderr
    call = a2a("call", "nobody", "act", "--timeout", "5", env=env)
    assert call.returncode == 1 and call.stderr.startswith("a2a call: NO_RESPONDERS: "), call.stderr
    assert found.values["NATS_URL"].split("//")[1] not in call.stderr or "nobody" in call.stderr
    # The library reads it too; the environment and explicit values come first.
    monkeypatch.setenv("A2A_DEV_FILE", str(file))
    monkeypatch.delenv("NATS_URL", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("A2A_OPEN", raising=False)
    settings = Settings.from_env()
    assert (settings.nats_url, settings.redis_url, settings.open) == (
        found.values["NATS_URL"],
        found.values["REDIS_URL"],
        True,
    )
    monkeypatch.setenv("A2A_OPEN", "0")
    assert Settings.from_env().open is False  # the environment's own value first
    assert Settings.from_env(nats_url="nats://elsewhere:4222").redis_url == "redis://127.0.0.1:6379/0"
    monkeypatch.setenv("NATS_URL", "nats://elsewhere:4222")
    assert Settings.from_env().redis_url == "redis://127.0.0.1:6379/0"  # another cluster: not the file's
    assert Settings.from_env({}).nats_url == "nats://127.0.0.1:4222"  # an explicit mapping: only it
    # A second `a2a up` says where the first one is, and leaves its file alone.
    again = a2a("up", env=clean_env(tmp_path))
    assert again.returncode == 1 and "a dev cluster already runs" in again.stderr
    assert str(proc.pid) in again.stderr and again.stderr.count("\n") == 1
    assert file.exists()


def test_up_prints_the_urls_and_removes_the_file_when_it_stops(
    up: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, file = up
    values = read_dev_cluster({"A2A_DEV_FILE": str(file)})
    assert values is not None
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert f"export NATS_URL={values.values['NATS_URL']}" in out
    assert f"export REDIS_URL={values.values['REDIS_URL']}" in out
    assert str(file) in out
    assert not file.exists()


def test_a_stale_file_is_ignored_with_a_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "dev.env"
    urls = "export NATS_URL=nats://127.0.0.1:1\nexport REDIS_URL=redis://127.0.0.1:1/0\n"
    file.write_text(f"{urls}export A2A_DEV_PID={_dead_pid()}\n")
    found = read_dev_cluster({"A2A_DEV_FILE": str(file)})
    assert found is not None and not found.running
    monkeypatch.setenv("A2A_DEV_FILE", str(file))
    monkeypatch.delenv("NATS_URL", raising=False)
    assert Settings.from_env().nats_url == "nats://127.0.0.1:4222"
    env = clean_env(tmp_path, A2A_CONNECT_TIMEOUT="0.5")
    out = a2a("call", "nobody", "act", "--timeout", "2", env=env)
    lines = out.stderr.splitlines()
    assert lines[0] == f"a2a call: ignoring {file}: the a2a up that wrote it (pid {found.pid}) is gone"
    assert lines[1].startswith("a2a call: using the default NATS nats://127.0.0.1:4222 and Redis redis://")
    assert "(no --nats-url, NATS_URL or running 'a2a up')" in lines[1]
    assert out.returncode == 1 and len(lines) == 3


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (
            "export NATS_URL=nats://127.0.0.1:1\nexport A2A_DEV_PID=1\n",
            "expected A2A_DEV_PID, NATS_URL, REDIS_URL",
        ),
        ("NATS_URL=http://x\nREDIS_URL=redis://x:1/0\nA2A_DEV_PID=1\n", "has no supported scheme"),
        ("export PATH=/evil\n", "expected A2A_DEV_PID"),
        ("\udcff", "cannot read"),
    ],
)
def test_a_file_that_is_not_one_is_a_one_line_usage_error(text: str, names: str, tmp_path: Path) -> None:
    file = tmp_path / "dev.env"
    file.write_bytes(text.encode(errors="surrogateescape"))
    for command in (("agents",), ("call", "a", "b"), ("up",)):
        out = a2a(*command, env=clean_env(tmp_path))
        assert out.returncode == 2, out.stderr
        assert out.stderr.count("\n") == 1 and str(file) in out.stderr and names in out.stderr
        assert "Traceback" not in out.stderr


def test_up_replaces_a_stale_file(tmp_path: Path) -> None:
    file = tmp_path / "dev.env"
    stale = _dead_pid()
    file.write_text(f"NATS_URL=nats://127.0.0.1:1\nREDIS_URL=redis://127.0.0.1:1/0\nA2A_DEV_PID={stale}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "a2a", "up"],
        env=clean_env(tmp_path),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: f"A2A_DEV_PID={proc.pid}" in file.read_text(), timeout=30)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert f"a2a up: replacing {file}: the a2a up that wrote it (pid {stale}) is gone\n" in err
    assert not file.exists() and proc.returncode == 0
    assert os.environ.get("A2A_DEV_FILE") != str(file)
