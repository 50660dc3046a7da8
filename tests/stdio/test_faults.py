"""Programs that go silent, answer late, crash, cannot start or will not stop: every call ends with
a typed error by its deadline, the process is replaced, and nothing is left running."""

from __future__ import annotations

import os
from dataclasses import replace

import anyio
import psutil
import pytest

from a2a import Settings
from a2a.errors import DeadlineExceeded, Unavailable

from .conftest import FAST, pids, ready, serving, until

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie waiting for init to reap it counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_silent_process_times_out_is_replaced_and_the_next_call_works(settings: Settings) -> None:
    async with serving(settings) as (rt, peer):
        (first,) = pids(peer)
        params = {"objective": "x", "remote_message": "silent", "constraints": {"local_turn_timeout_ms": 300}}
        with anyio.fail_after(3):
            with pytest.raises(DeadlineExceeded, match=r"within 0.3 s \(the turn's timeout\)") as caught:
                await rt.call("local", "prompt", params)
        assert caught.value.code == "DEADLINE_EXCEEDED"
        await until(lambda: peer.stats.killed == 1 and pids(peer) != [first] and ready(peer)())
        assert first is not None and gone(first)
        assert await rt.call("local", "run", {"text": "again"}) == "local says again"
        assert peer.stats.timeouts == 1 and peer.stats.restarts == 1 and peer.stats.crashes == 0


async def test_the_calls_deadline_bounds_the_turn(settings: Settings) -> None:
    async with serving(settings) as (rt, peer):
        with pytest.raises(DeadlineExceeded):
            await rt.call("local", "run", {"text": "silent"}, timeout=0.5)
        await until(lambda: peer.stats.killed == 1 and ready(peer)())
        assert await rt.call("local", "run", {"text": "again"}) == "local says again"


async def test_a_late_answer_within_the_grace_frees_the_process_for_the_next_request(
    settings: Settings,
) -> None:
    async with serving(settings, config=replace(FAST, grace=3.0)) as (rt, peer):
        (first,) = pids(peer)
        late = {
            "objective": "x",
            "remote_message": "sleep:0.8",
            "constraints": {"local_turn_timeout_ms": 200},
        }
        with pytest.raises(DeadlineExceeded):
            await rt.call("local", "prompt", late)
        assert [p.state for p in peer.processes()] == ["draining"]
        # Sent while the process still works on the late request: it waits for it, and gets
        # its own answer, not the late one.
        assert await rt.call("local", "run", {"text": "pid"}) == str(first)
        assert pids(peer) == [first] and peer.stats.killed == 0 and peer.stats.answered == 2


async def test_a_withdrawn_call_stops_its_request(settings: Settings) -> None:
    async with serving(settings) as (rt, peer):
        (first,) = pids(peer)
        with anyio.move_on_after(0.5):
            await rt.call("local", "run", {"text": "silent"})
        await until(lambda: peer.stats.killed == 1 and ready(peer)())
        assert pids(peer) != [first] and peer.stats.timeouts == 0
        assert await rt.call("local", "run", {"text": "back"}) == "local says back"


async def test_a_crash_mid_request_is_unavailable_then_the_process_restarts(settings: Settings) -> None:
    async with serving(settings) as (rt, peer):
        (first,) = pids(peer)
        with pytest.raises(Unavailable) as caught:
            await rt.call("local", "run", {"text": "crash"})
        message = caught.value.message
        assert caught.value.code == "UNAVAILABLE"
        assert f"local[0] (pid {first}) exited with code 3 during the request" in message
        assert "boom: something broke" in message  # the tail of its stderr
        assert "Traceback" not in message
        await until(ready(peer))
        assert await rt.call("local", "run", {"text": "pid"}) != str(first)
        assert peer.stats.crashes == 1 and peer.stats.restarts == 1


async def test_a_program_that_exits_at_start_fails_calls_fast_and_restarts_with_backoff(
    settings: Settings,
) -> None:
    config = replace(FAST, backoff_first=0.1, backoff_max=0.4)
    async with serving(settings, "exit_at_start.py", config=config) as (rt, peer):
        start = anyio.current_time()
        for _ in range(3):
            with anyio.fail_after(2):
                with pytest.raises(Unavailable, match="exited with code 7") as caught:
                    await rt.call("local", "run", {"text": "hello"})
            assert "fatal: no configuration found" in caught.value.message
            await anyio.sleep(0.2)
        await anyio.sleep(max(0.0, 1.5 - (anyio.current_time() - start)))
        elapsed = anyio.current_time() - start
        # Restarts after 0.1, 0.2, 0.4, 0.4, ... s: a handful, not one per event-loop turn.
        assert 2 <= peer.stats.restarts <= elapsed / 0.1 + 1, peer.stats.as_dict()
        assert peer.stats.crashes >= peer.stats.restarts
        assert [p.state for p in peer.processes()] in (["exited"], ["ready"], ["starting"])


async def test_stopping_kills_a_stubborn_process_and_what_it_started(settings: Settings) -> None:
    async with serving(settings, env={"STUBBORN": "1"}) as (rt, peer):
        (parent,) = pids(peer)
        child = int(await rt.call("local", "run", {"text": "spawn"}))
        assert parent is not None and not gone(parent) and not gone(child)
        start = anyio.current_time()
    # stdin closed (ignored), SIGTERM (ignored), SIGKILL: within about two grace periods.
    assert anyio.current_time() - start < 5
    await until(lambda: gone(parent) and gone(child))
    assert os.getpid() not in (parent, child)
