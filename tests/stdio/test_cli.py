"""``a2a serve-stdio``: served from the command line, stopped by SIGTERM, and its usage errors."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import psutil
import pytest

from a2a import Runtime, Settings, by_capability
from a2a.cli.main import build_parser, run_command
from tests.helpers import ROOT, agent_env

from .conftest import command

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_serve_stdio_serves_the_program_until_sigterm(settings: Settings, tmp_path: Path) -> None:
    argv = ["serve-stdio", "clitest", "--pool", "2", "--capability", "test.stdio", "--", *command()]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = await anyio.open_process(
            [sys.executable, "-m", "a2a", *argv],
            env=agent_env(settings, AGENT_NAME="cli"),
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    async with proc:
        try:
            async with Runtime(settings) as rt:
                await rt.wait_for_agents(["clitest"], timeout=20)
                assert await rt.call("clitest", "run", {"text": "hi"}) == "cli says hi"
                routed = await rt.call(by_capability("test.stdio"), "run", {"text": "again"})
                assert routed == "cli says again"
                workers = psutil.Process(proc.pid).children()
                assert len(workers) == 2
            proc.send_signal(signal.SIGTERM)
            with anyio.fail_after(15):
                status = await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
    output = log.read_text()
    assert status == 0, output
    assert "Traceback" not in output and "serving stdio agent clitest" in output
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (
            ["serve-stdio", "x"],
            "a2a serve-stdio: no command to run: a2a serve-stdio NAME [options] -- COMMAND",
        ),
        (["serve-stdio", "x", "--", "no-such-program-anywhere"], "command not found"),
        (["serve-stdio", "x", "--cwd", "/no/such/dir", "--", "python3"], "is not a directory"),
        (["serve-stdio", "x", "--pool", "2", "python3"], "put '--' before the command"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(
    argv: list[str], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(argv)
    assert run_command(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("a2a serve-stdio: ") and err.count("\n") == 1 and reason in err


@pytest.mark.parametrize("pool", ["0", "x", "100000"])
def test_a_bad_pool_size_is_a_usage_error(pool: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["serve-stdio", "x", "--pool", pool, "--", "python3"])
    with pytest.raises(SystemExit) as caught:  # as main() exits for a usage error
        run_command(args)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--pool" in err and err.count("\n") == 1
