"""The person's controls beyond the seed's checklist: semi-auto review rules, take over,
controls from another process, an owner that leaves (its session adopted), and the policy's
rate and concurrency in Redis."""

from __future__ import annotations

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.errors import InvalidParams, Overloaded
from a2a.sessions import Limits, NotFound, Sessions, SharedCallPolicy
from tests.sessions.conftest import USER, Bench

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_semi_auto_sends_by_itself_unless_a_rule_asks_for_review(bench: Bench) -> None:
    s = await bench.wait(await bench.start(mode="semi_auto", limits=Limits(max_turns=2)), "stopped")
    assert [t.sent_by for t in s.turns if t.role == "local_agent"] == ["auto_sent", "auto_sent"]
    s = await bench.wait(await bench.start("secret", mode="semi_auto"), "ready_to_send")
    assert s.review == "the draft contains what looks like a secret"
    await bench.sessions.stop(s.id, USER)
    s = await bench.wait(await bench.start("tools:1", mode="semi_auto"), "ready_to_send")
    assert s.review == "the local agent used tools for this draft"
    await bench.sessions.stop(s.id, USER)
    assert len(bench.received) == 2  # only the first session's messages went out


async def test_take_over_the_person_writes_then_hands_back(bench: Bench) -> None:
    s = await bench.wait(await bench.start(mode="manual", limits=Limits(max_turns=3)), "ready_to_send")
    s = await bench.sessions.take_over(s.id, USER)
    assert s.review == "take over: write the next message"
    await bench.sessions.write(s.id, USER, "written by me")
    s = await bench.wait(s, "ready_to_send")
    assert s.draft is None and s.review == "take over: write the next message"  # no local draft asked
    assert [r.text for r in bench.received] == ["written by me"]
    asked = len(bench.frames())
    await bench.sessions.take_over(s.id, USER, on=False)
    s = await bench.wait(s, "ready_to_send")
    assert s.draft is not None and len(bench.frames()) == asked + 1  # the local agent drafts again
    await bench.sessions.approve(s.id, USER)
    s = await bench.wait(s, "ready_to_send")
    labels = [(t.role, t.sent_by) for t in s.turns if t.role != "remote_agent"]
    assert labels == [("user", "user_written"), ("local_agent", "user_approved")]
    with pytest.raises(InvalidParams):
        await bench.sessions.write(s.id, USER, "   ")


async def test_another_process_controls_a_session_and_one_serving_its_user_adopts_it(
    bench: Bench, settings: Settings
) -> None:
    async with Runtime(settings) as other_rt, Sessions(other_rt) as other:
        s = await bench.wait(await bench.start(mode="manual", limits=Limits(max_turns=1)), "ready_to_send")
        await other.approve(s.id, USER)  # written in Redis; the owner sends
        s = await bench.wait(s, "stopped")
        assert s.sent == 1 and len(bench.received) == 1
        with pytest.raises(NotFound):
            await other.get(s.id, "bob")  # another user's session does not exist for them

        async with Sessions(bench.rt, lease=0.6) as short:
            s2 = await short.start(
                user_id=USER, profile_id="drafter", remote="remote", objective="x", limits=Limits(max_turns=1)
            )
            s2 = await short.wait(s2.id, USER, "ready_to_send")
        # Its owner has left (its lease released on exit): bench's Sessions, which serves the
        # user, adopts it with its draft still waiting; ``other`` serves nobody and only reads.
        with anyio.fail_after(5):
            while (s3 := await other.get(s2.id, USER)).owner != bench.sessions.owner:
                await anyio.sleep(0.05)
        assert s3.state == "ready_to_send" and s3.draft == s2.draft and s3.turns == []
        assert [(a.previous, a.by, a.state, a.rerun) for a in s3.adoptions] == [
            (short.owner, bench.sessions.owner, "ready_to_send", None)
        ]
        await other.approve(s2.id, USER)
        s3 = await bench.wait(s3, "stopped")
        assert [t.role for t in s3.turns] == ["local_agent", "remote_agent"] and len(bench.received) == 2
        assert [x.id for x in await other.sessions(USER)][:2] == [s2.id, s.id]


@pytest.mark.parametrize("remote_delay", [30.0])
async def test_the_owner_acts_on_another_process_s_controls_at_once(bench: Bench, settings: Settings) -> None:
    async with (
        Sessions(bench.rt, lease=30.0) as owner,  # renewed after 10 s: only the events wake it sooner
        Runtime(settings) as other_rt,
        Sessions(other_rt) as other,
    ):
        s = await owner.start(user_id=USER, profile_id="drafter", remote="remote", objective="o")
        s = await owner.wait(s.id, USER, "ready_to_send")
        with anyio.fail_after(3):
            await other.approve(s.id, USER)  # the owner waits for the person: sends
            while not bench.received:
                await anyio.sleep(0.01)
            await other.stop(s.id, USER)  # the owner waits for the remote: withdraws the call
            while not bench.received[0].withdrawn:
                await anyio.sleep(0.01)


async def test_the_rate_and_the_concurrency_hold_across_processes(bench: Bench, settings: Settings) -> None:
    policy = SharedCallPolicy(
        allow_shared_agent_calls=True,
        allowed_shared_device_ids=["remote"],
        max_concurrent_shared_calls=2,
        max_calls_per_minute=3,
    )
    async with Runtime(settings) as other_rt, Sessions(other_rt) as other:
        here, there = bench.sessions.policies, other.policies
        async with here.admit(policy, USER, "p1", "remote"), there.admit(policy, USER, "p1", "remote"):
            with pytest.raises(Overloaded) as busy:
                async with here.admit(policy, USER, "p1", "remote"):
                    pass
            assert busy.value.details == {"limit": "maxConcurrentSharedCalls", "max": 2}
        async with there.admit(
            policy, USER, "p1", "remote"
        ):  # the slots were given back; the 3rd this minute
            pass
        with pytest.raises(Overloaded) as rate:
            async with here.admit(policy, USER, "p1", "remote"):
                pass
        assert rate.value.details == {"limit": "rate", "perMinute": 3}
        async with here.admit(policy, USER, "p1", "elsewhere"):  # a rate per (profile, target)
            pass
        async with here.admit(policy, "bob", "p1", "remote"):  # and per user: alice's use is hers
            pass


async def test_a_reply_that_would_overspend_the_runs_budget_stops_it_with_the_limit(bench: Bench) -> None:
    limits = Limits(max_tokens_budget=300)
    s = await bench.wait(
        await bench.start(mode="full_auto", remote="spender", limits=limits), "stopped", "error"
    )
    assert s.state == "stopped", s.ending
    assert s.ending is not None and (s.ending.kind, s.ending.limit) == ("limit", "maxTokensBudget")
    assert "of 300" in s.ending.message
    assert s.tokens_used >= 300  # what the remote spent before it was stopped counts
