"""Seed 001's verification steps, against real servers, with a stdio program as the local agent.

Each test names the step it checks. Step 5's "E2EE session integrity" is, here: pausing,
resuming and stopping leave the remote conversation's ids intact (one conversation, one
trace, turns in order, nothing sent twice).
"""

from __future__ import annotations

import anyio
import pytest

from a2a.errors import CycleDetected, InvalidParams, PermissionDenied
from a2a.sessions import Limits, SharedCallPolicy
from a2a.sessions.bounds import summarise
from a2a.stdio import Constraints, HistoryTurn
from tests.sessions.conftest import USER, Bench

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SEED_PATH = ["planning", "waiting_local", "ready_to_send", "waiting_remote", "processing_remote", "planning"]


async def test_1_2_a_session_loops_local_draft_remote_reply_local_follow_up(bench: Bench) -> None:
    s = await bench.start(mode="full_auto", limits=Limits(max_turns=3))
    s = await bench.wait(s, "stopped")
    assert [t.role for t in s.turns] == ["local_agent", "remote_agent"] * 3
    frames = bench.frames()
    assert [f["turn_index"] for f in frames] == [0, 1, 2]
    # Each remote reply goes back to the local agent as the next turn's remote message.
    assert frames[0]["remote_message"] == ""
    assert frames[1]["remote_message"] == s.turns[1].text and frames[2]["remote_message"] == s.turns[3].text
    assert all(f["session_id"] == s.id and f["profile_id"] == "drafter" for f in frames)
    assert [r.text for r in bench.received] == [s.turns[0].text, s.turns[2].text, s.turns[4].text]
    # The seed's control metadata travels with each message, outside its text.
    control = {"originAgentDeviceId": "drafter", "traceId": s.trace_id, "hopCount": 1}
    assert [r.orchestration for r in bench.received] == [{**control, "orchestratorProfileId": "drafter"}] * 3
    path = [t.to for t in s.transitions]
    assert path[:6] == SEED_PATH
    assert [(t.source, t.to) for t in s.transitions[:1]] == [("idle", "planning")]


async def test_3_manual_mode_sends_nothing_until_the_person_approves(bench: Bench) -> None:
    s = await bench.start(mode="manual", limits=Limits(max_turns=2))
    s = await bench.wait(s, "ready_to_send")
    assert s.review == "manual mode: approve each message" and s.draft is not None
    await anyio.sleep(0.5)
    assert bench.received == []  # nothing left without approval
    await bench.sessions.approve(s.id, USER)
    s = await bench.wait(s, "ready_to_send")
    assert len(bench.received) == 1 and bench.received[0].text.startswith("draft 0")
    await bench.sessions.approve(s.id, USER, text="my edited message")
    s = await bench.wait(s, "stopped")
    assert [r.text for r in bench.received][1] == "my edited message"
    assert [t.sent_by for t in s.turns if t.role != "remote_agent"] == ["user_approved", "user_edited"]
    with pytest.raises(InvalidParams):
        await bench.sessions.approve(s.id, USER)  # nothing waits any more


async def test_4_full_auto_runs_until_the_turn_limit_and_says_so(bench: Bench) -> None:
    s = await bench.wait(await bench.start(mode="full_auto", limits=Limits(max_turns=4)), "stopped")
    assert s.sent == 4 and len(bench.received) == 4
    assert s.ending is not None and s.ending.kind == "limit" and s.ending.limit == "maxTurns"
    assert {t.sent_by for t in s.turns if t.role == "local_agent"} == {"auto_sent"}


@pytest.mark.parametrize("remote_delay", [0.4])
async def test_5_pause_resume_and_stop_keep_the_remote_conversation_intact(bench: Bench) -> None:
    s = await bench.start(mode="full_auto", limits=Limits(max_turns=8))
    with anyio.fail_after(10):
        while not bench.received:
            await anyio.sleep(0.02)
    await bench.sessions.pause(s.id, USER)
    paused_at = len(bench.received)
    await anyio.sleep(1.5)  # the reply in flight lands; nothing new is sent
    assert len(bench.received) == paused_at
    s = await bench.sessions.get(s.id, USER)
    assert s.state == "paused"
    await bench.sessions.resume(s.id, USER)
    with anyio.fail_after(10):
        while len(bench.received) <= paused_at:
            await anyio.sleep(0.02)
    s = await bench.sessions.stop(s.id, USER)
    assert s.state == "stopped" and s.ending is not None and s.ending.kind == "user"
    await anyio.sleep(1.0)
    sent = len(bench.received)
    s = await bench.sessions.get(s.id, USER)
    assert len(bench.received) == sent  # stopped means nothing more goes out
    assert {r.conversation for r in bench.received} == {s.id}  # one conversation throughout
    assert {r.user for r in bench.received} == {USER}
    outbound = [t.text for t in s.turns if t.role == "local_agent"]
    assert outbound == [r.text for r in bench.received][: len(outbound)]  # in order, none twice
    with pytest.raises(InvalidParams):
        await bench.sessions.resume(s.id, USER)


async def test_6_the_policy_blocks_a_target_it_does_not_list(bench: Bench) -> None:
    with pytest.raises(PermissionDenied) as unlisted:
        await bench.start(mode="full_auto", remote="remote2")
    assert "allowedSharedDeviceIds" in unlisted.value.message
    # The policy is checked again at each send: withdrawn while a draft waits, the send is refused.
    s = await bench.wait(await bench.start(mode="manual"), "ready_to_send")
    await bench.sessions.set_policy(USER, "drafter", SharedCallPolicy())  # the default: deny
    await bench.sessions.approve(s.id, USER)
    s = await bench.wait(s, "error")
    assert s.ending is not None and s.ending.kind == "policy" and "allowSharedAgentCalls" in s.ending.message
    with pytest.raises(PermissionDenied):
        await bench.start(mode="full_auto")
    assert bench.received == []


async def test_7_loops_are_refused_a_self_loop_and_a_chain_past_max_hop_count(bench: Bench) -> None:
    with pytest.raises(CycleDetected):
        await bench.start(remote="drafter")
    s = await bench.wait(await bench.start(mode="full_auto", remote="relay1"), "error")
    assert s.ending is not None and s.ending.kind == "policy"
    assert "MAX_HOPS_EXCEEDED" in s.ending.message  # relay1 -> relay2 -> remote is 3 hops; max 2
    assert bench.received == []
    policy = SharedCallPolicy(
        allow_shared_agent_calls=True, allowed_shared_device_ids=["relay1"], max_hop_count=3
    )
    await bench.sessions.set_policy(USER, "drafter", policy)
    s = await bench.wait(
        await bench.start(mode="full_auto", remote="relay1", limits=Limits(max_turns=1)), "stopped"
    )
    assert [r.hop for r in bench.received] == [3]


async def test_8_audit_entries_are_per_profile_per_user_and_redacted(bench: Bench) -> None:
    s = await bench.wait(
        await bench.start("check sk-proj-abcdefghijklmnop1234567890 tools:9", mode="full_auto"), "error"
    )
    entries = await bench.sessions.audit("drafter", USER)
    assert entries and {e.session_id for e in entries} == {s.id}
    assert all(e.profile_id == "drafter" and e.target == "remote" and e.mode == "full_auto" for e in entries)
    failures = [e for e in entries if e.status == "error"]
    assert len(failures) == 3 and all("max_tool_rounds" in (e.failure_reason or "") for e in failures)
    assert "sk-proj" not in s.objective and all("sk-proj" not in (e.failure_reason or "") for e in entries)
    assert await bench.sessions.audit("drafter", "bob") == []
    assert await bench.sessions.audit("remote", USER) == []


async def test_9_a_local_agent_killed_mid_run_halts_the_loop_in_error(bench: Bench) -> None:
    s = await bench.wait(await bench.start("crash:1", mode="full_auto"), "error")
    assert s.ending is not None and s.ending.kind == "failure"
    assert "UNAVAILABLE" in s.ending.message and "exit" in s.ending.message.lower()
    assert len(bench.received) == 1  # the first turn went out, nothing after the crash
    await anyio.sleep(0.5)
    assert len(bench.received) == 1 and (await bench.sessions.get(s.id, USER)).state == "error"


async def test_10_oversized_history_is_summarised_deterministically_within_bounds(bench: Bench) -> None:
    constraints = Constraints(max_history_turns=2, max_history_chars=300)
    s = await bench.start("pad:120", mode="full_auto", limits=Limits(max_turns=5), constraints=constraints)
    s = await bench.wait(s, "stopped")
    frames = bench.frames()
    assert len(frames) == 5
    for i, frame in enumerate(frames):
        assert len(frame["history"]) <= 2 and sum(len(t["text"]) for t in frame["history"]) <= 300
        if i:
            assert frame["remote_message"] == [t for t in s.turns if t.role == "remote_agent"][i - 1].text
    last = frames[-1]  # built from the 8 turns before it; the 8th (a reply) is its remote message
    earlier = [HistoryTurn(role=t.role, text=t.text) for t in s.turns[:7]]
    dropped = earlier[: len(earlier) - len(last["history"])]
    assert len(dropped) == 5 and last["history_summary"].startswith("5 earlier turns summarised:")
    assert last["history_summary"] == summarise(dropped)  # the same turns give the same summary


async def test_11_tool_rounds_and_the_turn_timeout_are_enforced(bench: Bench) -> None:
    s = await bench.wait(
        await bench.start("tools:2", mode="full_auto", limits=Limits(max_turns=1)), "stopped"
    )
    assert s.sent == 1  # within max_tool_rounds 3
    s = await bench.wait(await bench.start("tools:4", mode="full_auto"), "error")
    assert (
        s.ending is not None and s.ending.limit == "maxFailures" and "max_tool_rounds 3" in s.ending.message
    )
    constraints = Constraints(local_turn_timeout_ms=500)
    start = anyio.current_time()
    s = await bench.start("slow", mode="full_auto", constraints=constraints, limits=Limits(max_failures=1))
    s = await bench.wait(s, "error")
    assert anyio.current_time() - start < 5
    assert s.ending is not None and "DEADLINE_EXCEEDED" in s.ending.message
    assert all(
        f["constraints"]["local_turn_timeout_ms"] <= 500 for f in bench.frames() if "slow" in f["objective"]
    )
