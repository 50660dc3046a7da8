"""A hostile or broken stdio program: bytes that are not UTF-8, an endless answer, a dead pool,
grandchildren that hide in a session of their own or outlive a SIGKILLed serving process.

Each attack must cost at most the request it concerns: the pool keeps serving, the registry
tells the truth about it, and nothing the program started is left running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import anyio
import psutil
import pytest

from a2a import Runtime, Settings, by_capability
from a2a.errors import AgentError, NoCapableAgent, PayloadTooLarge, Unavailable
from tests.helpers import ROOT, agent_env
from tests.stdio.conftest import FAST, command, pids, ready, serving, until

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie waiting for its reaper counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_all(pids: Iterable[int]) -> None:
    """Whatever a failed test leaves running is killed, so it cannot disturb other tests."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_bytes_that_are_not_utf8_are_violations_and_the_pool_keeps_serving(settings: Settings) -> None:
    async with serving(settings, pool=2) as (rt, peer):
        before = pids(peer)
        with anyio.fail_after(3):  # a typed error at once, not at the deadline
            with pytest.raises(AgentError, match="malformed response frame") as caught:
                await rt.call("local", "run", {"text": "badanswer"})
        assert caught.value.code == "AGENT_ERROR" and "Traceback" not in caught.value.message
        assert await rt.call("local", "run", {"text": "badbytes"}) == "after bad bytes"
        answers: list[str] = []

        async def call(i: int) -> None:
            answers.append(await rt.call("local", "run", {"text": f"n{i}"}))

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(call, i)
        assert sorted(answers) == sorted(f"local says n{i}" for i in range(20))
        assert pids(peer) == before  # no process died or was restarted
        assert peer.stats.crashes == peer.stats.killed == peer.stats.restarts == 0
        violations = peer.stats.violations.by_kind
        assert violations["malformed response"] == 1  # the draft that is not UTF-8
        assert violations["not json"] == 1 and violations["not utf-8"] == 1  # the bare bytes, the progress


async def test_an_endless_answer_fails_its_call_at_once_with_payload_too_large(settings: Settings) -> None:
    config = replace(FAST, timeout=8.0, tool_timeout=8.0)
    async with serving(settings, config=config) as (rt, peer):
        (first,) = pids(peer)
        start = time.monotonic()
        with pytest.raises(PayloadTooLarge) as caught:
            await rt.call("local", "run", {"text": f"hugeanswer:{50_000_000}"}, timeout=8)
        elapsed = time.monotonic() - start
        assert caught.value.code == "PAYLOAD_TOO_LARGE" and "1048576" in caught.value.message
        assert elapsed < 3.0, f"PAYLOAD_TOO_LARGE after {elapsed:.2f} s"
        # The process answered (too much): it is ready for the next request as it is.
        assert await rt.call("local", "run", {"text": "next"}) == "local says next"
        assert pids(peer) == [first] and peer.stats.violations.by_kind["oversized line"] == 1


async def test_the_registry_shows_a_pool_with_no_running_process_as_offline(settings: Settings) -> None:
    config = replace(FAST, backoff_first=2.0, backoff_max=2.0)
    async with serving(settings, pool=2, config=config) as (rt, peer):
        (host,) = rt.hosts.values()
        registry = rt.registry
        assert registry is not None

        async def status() -> str | None:
            profile = await registry.get(host.instance_id)
            return None if profile is None else profile.status

        async def crash() -> None:
            with pytest.raises(Unavailable):
                await rt.call("local", "run", {"text": "crash"})

        assert await status() == "available"
        async with anyio.create_task_group() as tg:
            tg.start_soon(crash)
            tg.start_soon(crash)
        assert all(p.state == "exited" for p in peer.processes())
        with anyio.fail_after(1.5):  # a state change, not the next heartbeat's
            while await status() != "offline":
                await anyio.sleep(0.02)
        with pytest.raises(NoCapableAgent):  # routing passes it by
            await rt.call(by_capability("test.stdio"), "run", {"text": "anyone?"})
        await until(ready(peer, 2), timeout=5)
        with anyio.fail_after(1.5):
            while await status() != "available":
                await anyio.sleep(0.02)
        assert await rt.call("local", "run", {"text": "back"}) == "local says back"


async def test_a_grandchild_in_a_session_of_its_own_does_not_outlive_the_agent(settings: Settings) -> None:
    started: list[int] = []
    try:
        async with serving(settings) as (rt, peer):
            (program,) = pids(peer)
            assert program is not None
            started += [program, int(await rt.call("local", "run", {"text": "spawn-setsid"}))]
            started.append(int(await rt.call("local", "run", {"text": "spawn"})))
            assert not any(gone(pid) for pid in started)
        await until(lambda: all(gone(pid) for pid in started), timeout=3)
    finally:
        kill_all(started)


async def test_nothing_the_program_started_outlives_a_sigkilled_serving_process(
    settings: Settings, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "a2a", "serve-stdio", "victim", "--", *command()]
    started: list[int] = []
    with (tmp_path / "serve.log").open("wb") as out:
        proc = await anyio.open_process(argv, env=agent_env(settings), cwd=ROOT, stdout=out, stderr=out)
    async with proc:
        try:
            async with Runtime(settings) as rt:
                await rt.wait_for_agents(["victim"], timeout=20)
                for text in ("pid", "spawn", "spawn-setsid"):
                    started.append(int(await rt.call("victim", "run", {"text": text})))
            assert not any(gone(pid) for pid in started)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            await until(lambda: all(gone(pid) for pid in started), timeout=5)
        finally:
            if proc.returncode is None:
                proc.kill()
            kill_all(started)
