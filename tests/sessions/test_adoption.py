"""Adoption inside one test process: the lease fences a loop's writes, a process adopts at most
its limit, the users in turn, and never the sessions of a user it does not serve."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from a2a.sessions import Limits, Session, Sessions, Turn
from a2a.sessions.adoption import adopted
from a2a.sessions.machine import interrupted
from a2a.sessions.outcomes import sending
from a2a.sessions.store import LeaseLost
from tests.sessions.conftest import ALLOWED, USER, Bench

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_a_loop_that_lost_its_lease_writes_nothing(bench: Bench) -> None:
    s = await bench.wait(await bench.start(mode="manual"), "ready_to_send")
    store = bench.sessions.store
    lease_key = store._key(s.id, ":owner")
    await store.redis.set(lease_key, "intruder", px=5000)  # as another process that adopted it
    version = (await store.get(s.id)).version
    with pytest.raises(LeaseLost):
        await store.update(
            s.id, lambda x: msgspec.structs.replace(x, draft="mine"), owner=bench.sessions.owner
        )
    assert (await store.get(s.id)).version == version
    await bench.sessions.approve(s.id, USER)  # the person's control is not fenced: it is written
    with anyio.fail_after(5):  # the loop wakes, finds it no longer owns the session, and ends
        while s.id in bench.sessions._runners:
            await anyio.sleep(0.02)
    after = await store.get(s.id)
    assert bench.received == [] and after.state == "ready_to_send" and after.turns == []
    assert after.version == version + 1  # the approval, nothing more
    assert await store.redis.get(lease_key) == "intruder"  # not released by the loser


async def _orphans(bench: Bench, users: list[str]) -> list[Session]:
    """One session per user in ``users`` (in order), waiting for approval, whose owner then left."""
    started = []
    async with Sessions(bench.rt, lease=0.5) as gone:
        for user in users:
            s = await gone.start(user_id=user, profile_id="drafter", remote="remote", objective="o")
            started.append(await gone.wait(s.id, user, "ready_to_send"))
            await anyio.sleep(0.01)  # distinct start and update times: the oldest is known
    return started


async def test_adoption_is_bounded_takes_users_in_turn_and_leaves_other_users_alone(bench: Bench) -> None:
    for user in ("carol", "bob"):
        await bench.sessions.set_policy(user, "drafter", ALLOWED)
    a1, a2, a3, c1, b1 = await _orphans(bench, [USER, USER, USER, "carol", "bob"])
    async with Sessions(bench.rt, lease=0.5, adopt_limit=2) as host:
        host.serve(USER, "carol")
        with anyio.fail_after(5):
            while len(host.adopter.running) < 2:
                await anyio.sleep(0.02)
        await anyio.sleep(0.6)  # more passes: still two
        assert host.adopter.running == {a1.id, c1.id}  # alice's oldest and carol's, not alice's three
        for s in (a2, a3, b1):
            left = await host.store.get(s.id)
            assert left.adoptions == [] and not await host.store.owned(s.id)
        await host.stop(c1.id, "carol")  # room again: alice's next oldest
        with anyio.fail_after(5):
            while host.adopter.running != {a1.id, a2.id}:
                await anyio.sleep(0.02)
        s = await host.get(a1.id, USER)
        assert s.owner == host.owner and s.adoptions[-1].by == host.owner
        await host.approve(a1.id, USER)  # the adopted loop sends the draft that waited
        s = await host.wait(a1.id, USER, "ready_to_send")
        assert [t.role for t in s.turns] == ["local_agent", "remote_agent"]
    b1 = await bench.sessions.get(b1.id, "bob")
    assert b1.state == "ready_to_send" and b1.adoptions == []  # nobody serving bob: it waits


async def test_a_session_left_unowned_past_its_time_is_stopped_when_read(bench: Bench) -> None:
    async with Sessions(bench.rt, lease=0.5) as gone:
        s = await gone.start(
            user_id=USER,
            profile_id="drafter",
            remote="remote",
            objective="o",
            limits=Limits(max_duration_ms=600),
        )
        await gone.wait(s.id, USER, "ready_to_send")
    await anyio.sleep(0.7)
    s = await bench.sessions.get(s.id, USER)
    assert s.state == "stopped" and s.ending is not None and s.ending.limit == "maxDurationMs"


async def test_a_step_cut_off_after_the_send_sends_the_same_message_again() -> None:
    turn = Turn(index=0, role="local_agent", text="hello", at=1.0, sent_by="user_approved")
    s = Session(
        id="s",
        user_id=USER,
        profile_id="p",
        remote="r",
        objective="o",
        state="waiting_remote",
        turns=[turn],
        in_flight="remote",
        mode="manual",
    )
    again = interrupted(s)
    assert (again.state, again.turns, again.draft, again.draft_by, again.review, again.in_flight) == (
        "ready_to_send",
        [],
        "hello",
        "user_approved",
        None,
        None,
    )  # sent without asking the person again: they let it go once
    adopted_ = adopted("new")(msgspec.structs.replace(s, owner="old"))
    assert adopted_.draft == "hello" and adopted_.owner == "new"
    assert [(a.previous, a.by, a.state, a.rerun, a.turn) for a in adopted_.adoptions] == [
        ("old", "new", "waiting_remote", "remote", 0)
    ]
    sent = sending(adopted_, "hello", "user_approved")
    assert [(t.index, t.text, t.resent) for t in sent.turns] == [(0, "hello", True)]
