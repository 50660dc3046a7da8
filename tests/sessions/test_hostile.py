"""Sessions against what goes wrong: a broken record, controls racing a step in flight, a
local agent that answers nonsense, a run out of time while a step waits."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.sessions import Limits, Sessions, SharedCallPolicy
from tests.sessions.conftest import USER, Bench

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_a_broken_record_neither_hides_the_others_nor_loops(bench: Bench) -> None:
    good = await bench.wait(await bench.start(mode="manual"), "ready_to_send")
    bad = await bench.wait(await bench.start(mode="manual"), "ready_to_send")
    await bench.sessions.store.redis.set(bench.sessions.store._key(bad.id), "garbage{")
    assert [s.id for s in await bench.sessions.sessions(USER)] == [good.id]
    with anyio.fail_after(5):  # its loop ends and gives its lease back
        while await bench.sessions.store.owned(bad.id):
            await anyio.sleep(0.05)
    assert await bench.sessions.store.owned(good.id)


@pytest.mark.parametrize("remote_delay", [1.0])
async def test_pause_and_resume_while_the_remote_answers_lose_nothing(bench: Bench) -> None:
    s = await bench.start(mode="full_auto", limits=Limits(max_turns=2))
    with anyio.fail_after(10):
        while not bench.received:
            await anyio.sleep(0.01)
    await bench.sessions.pause(s.id, USER)  # the reply is on its way
    s = await bench.sessions.resume(s.id, USER)
    assert s.state == "waiting_remote"  # back into the step under way
    s = await bench.wait(s, "stopped")
    assert [t.role for t in s.turns] == ["local_agent", "remote_agent"] * 2
    assert s.turns[1].text.startswith("reply 1 to: draft 0")
    assert [f["turn_index"] for f in bench.frames()] == [0, 1]  # the local agent was asked once a turn


async def test_a_local_agent_that_answers_nonsense_fails_its_turns(bench: Bench) -> None:
    odd = Agent("odd")

    @odd.action("prompt")
    async def prompt(ctx: Context, params: dict[str, Any]) -> Any:
        return ["not", "a", "draft"]

    await bench.rt.serve(odd)
    await bench.sessions.set_policy(
        USER, "odd", SharedCallPolicy(allow_shared_agent_calls=True, allowed_shared_device_ids=["remote"])
    )
    s = await bench.sessions.start(
        user_id=USER, profile_id="odd", remote="remote", objective="o", mode="full_auto"
    )
    s = await bench.wait(s, "error")
    assert s.ending is not None and s.ending.limit == "maxFailures" and "no draft_message" in s.ending.message
    assert bench.received == []


@pytest.mark.parametrize("remote_delay", [3.0])
async def test_the_run_ends_on_time_even_while_the_remote_answers(bench: Bench) -> None:
    start = anyio.current_time()
    s = await bench.start(mode="full_auto", limits=Limits(max_duration_ms=800))
    s = await bench.wait(s, "stopped", "error")
    assert anyio.current_time() - start < 2.5
    assert s.ending is not None and s.ending.limit == "maxDurationMs"
    assert [t.role for t in s.turns] == []  # the message that got no answer in time is not a turn


async def test_taking_over_sets_the_local_draft_aside(bench: Bench) -> None:
    s = await bench.wait(await bench.start(mode="manual"), "ready_to_send")
    await bench.sessions.pause(s.id, USER)
    s = await bench.sessions.take_over(s.id, USER)
    assert s.draft is None
    s = await bench.sessions.resume(s.id, USER)
    with pytest.raises(Exception, match="has no draft waiting"):
        await bench.sessions.approve(s.id, USER)
    await bench.sessions.write(s.id, USER, "mine")
    with anyio.fail_after(5):
        while not bench.received:
            await anyio.sleep(0.02)
    assert [r.text for r in bench.received] == ["mine"]


@pytest.mark.parametrize("remote_delay", [5.0])
async def test_a_stop_from_another_process_withdraws_the_call_in_flight(
    bench: Bench, settings: Settings
) -> None:
    s = await bench.start(mode="full_auto")
    with anyio.fail_after(10):
        while not bench.received:
            await anyio.sleep(0.01)
    async with Runtime(settings) as other_rt, Sessions(other_rt) as other:
        start = anyio.current_time()
        await other.stop(s.id, USER)  # the owner sees it within a poll and withdraws its call
        with anyio.fail_after(3):
            while not bench.received[0].withdrawn:
                await anyio.sleep(0.02)
        assert anyio.current_time() - start < 2
    s = await bench.sessions.get(s.id, USER)
    assert s.state == "stopped" and [t.role for t in s.turns] == ["local_agent"]
