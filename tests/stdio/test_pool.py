"""Several processes behind one agent: calls run side by side, and a crashed one is routed around."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from a2a import Settings
from a2a.errors import Unavailable
from a2a.stdio.stats import StderrLog

from .conftest import pids, ready, serving, until

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_two_processes_serve_two_calls_at_once(settings: Settings, tmp_path: Path) -> None:
    async with serving(settings, pool=2) as (rt, peer):
        assert len(set(pids(peer))) == 2
        answers: list[str] = []

        async def call(text: str) -> None:
            answers.append(await rt.call("local", "run", {"text": text}))

        # Each process answers only once both have the request: one after the other would
        # wait 10 s for a partner that never comes.
        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(call, f"barrier:{tmp_path}:2")
        assert sorted(answers) == sorted(str(p) for p in pids(peer))
        assert anyio.current_time() - start < 5

        answers.clear()
        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(call, "sleep:1")
        assert answers == ["slept 1", "slept 1"]
        assert anyio.current_time() - start < 1.9  # one after the other takes 2 s at least


async def test_a_crashed_process_is_routed_around_while_it_restarts(settings: Settings) -> None:
    async with serving(settings, pool=2) as (rt, peer):
        before = set(pids(peer))
        with pytest.raises(Unavailable):
            await rt.call("local", "run", {"text": "crash"})
        # The other process takes calls meanwhile.
        survivor = int(await rt.call("local", "run", {"text": "pid"}))
        assert survivor in before
        await until(ready(peer, 2))
        after = set(pids(peer))
        assert survivor in after and len(after - before) == 1
        assert peer.stats.crashes == 1 and peer.stats.restarts == 1


async def test_an_internal_error_restarts_its_process_and_the_pool_keeps_serving(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fault of the bridge itself (here: logging a stderr line raises) must end only the
    # process it happened on: the supervisor restarts it, the other slots never notice.
    line = StderrLog.line
    faults: list[bytes] = []

    def faulty(self: StderrLog, data: bytes, complete: bool = True) -> None:
        if data.startswith(b"eee") and not faults:
            faults.append(data)
            raise RuntimeError("a bug while reading stderr")
        line(self, data, complete)

    monkeypatch.setattr(StderrLog, "line", faulty)
    async with serving(settings, pool=2) as (rt, peer):
        before = set(pids(peer))
        with pytest.raises(Unavailable):
            await rt.call("local", "run", {"text": "floodwait:500"})
        survivor = int(await rt.call("local", "run", {"text": "pid"}))
        assert survivor in before
        await until(ready(peer, 2))
        for i in range(10):
            assert await rt.call("local", "run", {"text": f"n{i}"}) == f"local says n{i}"
        after = set(pids(peer))
        assert survivor in after and len(after - before) == 1
        assert peer.stats.failures == 1 and peer.stats.restarts == 1
