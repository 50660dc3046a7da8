"""Delegation modes, filtered context, threads, history, redaction and audit, across processes."""

from __future__ import annotations

import sys
import time
import uuid
from typing import Any

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.stores.audit import AuditFilter, read_audit
from a2a.wire import ChatMessage
from tests.helpers import ROOT, agent_env
from transports import NatsTransport

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

PII = (
    "Contact jane.doe@example.com or +1 415-555-0132; card 4111 1111 1111 1111; "
    "Bearer sk-proj-abcdefghijklmnop1234"
)


def received(response: dict[str, Any]) -> dict[str, Any]:
    """What the callee's task handler saw (it returns it as an artifact)."""
    return response["artifacts"][0]["value"]  # type: ignore[no-any-return]


async def seed_conversation(rt: Runtime, n: int, *, user: str = "alice") -> str:
    assert rt.history is not None
    conversation = uuid.uuid4().hex
    now = time.time()
    messages = [
        ChatMessage(
            role=["user", "assistant", "tool"][i % 3],
            content=f"message {i}: "
            + ("the parser fails on empty input " if i % 7 == 0 else "chit chat ")
            + (PII if i == n - 2 else ""),
            created_at=now - (n - i) * 60,
        )
        for i in range(n)
    ]
    await rt.history.append(conversation, *messages)
    await rt.history.claim(conversation, user)
    return conversation


async def test_delegate_passes_only_the_filtered_redacted_context_and_records_the_call_once(
    rt: Runtime,
) -> None:
    conversation = await seed_conversation(rt, 40)
    spec = {
        "target": "hop_b",
        "task": f"Fix the parser. {PII}",
        "objective": "fix parser for jane.doe@example.com",
        "context": {"last_messages": 5, "roles": ["user", "assistant"]},
        "max_context_tokens": 80,
    }
    response = await rt.call("hop_a", "delegate", spec, user_id="alice", conversation_id=conversation)
    assert response["status"] == "success" and response["target_employee"] == "hop_b"
    seen = received(response)
    assert 0 < len(seen["messages"]) <= 5 and seen["tokens"] <= 80
    everything = str(seen)
    for secret in (
        "jane.doe@example.com",
        "415-555-0132",
        "4111 1111 1111 1111",
        "sk-proj-abcdefghijklmnop1234",
    ):
        assert secret not in everything
    assert "[EMAIL]" in seen["task"] and "[CARD]" in seen["task"] and "[EMAIL]" in seen["objective"]
    assert seen["user"] == "alice"
    assert rt.history is not None
    interactions = await rt.history.interactions(conversation)
    assert len(interactions) == 1
    (i,) = interactions
    assert (i.caller, i.target, i.success) == ("hop_a", "hop_b", True)
    assert len(i.output_preview) <= 200 and "jane.doe" not in i.task
    assert i.thread_id == response["child_session_id"]


async def test_a_reused_thread_keeps_its_history_in_redis(rt: Runtime) -> None:
    first = await rt.call("hop_a", "delegate", {"target": "hop_b", "task": "step one"}, user_id="bob")
    thread = first["child_session_id"]
    assert received(first)["thread_messages"] == 0
    second = await rt.call(
        "hop_a",
        "delegate",
        {"target": "hop_b", "task": "step two", "thread_mode": "reuse", "thread_id": thread},
        user_id="bob",
    )
    assert second["child_session_id"] == thread
    assert received(second)["thread_messages"] == 2  # step one's task and answer
    fresh = await rt.call("hop_a", "delegate", {"target": "hop_b", "task": "other"}, user_id="bob")
    assert fresh["child_session_id"] != thread


async def test_a_sequential_chain_hands_on_intermediate_results(rt: Runtime) -> None:
    steps = [
        {"target": "hop_b", "task": "extract receipt"},
        {"target": "hop_c", "task": "categorize"},
        {"target": "hop_d", "task": "summarize"},
    ]
    responses = await rt.call("hop_a", "chain", {"steps": steps})
    assert [r["target_employee"] for r in responses] == ["hop_b", "hop_c", "hop_d"]
    second, third = received(responses[1]), received(responses[2])
    assert second["handoff"]["intermediateResults"]["result"] == "hop_b: extract receipt"
    assert third["handoff"]["intermediateResults"]["from"] == "hop_c"


async def test_a_failing_chain_step_surfaces_as_a_typed_error_where_it_happened(rt: Runtime) -> None:
    from a2a.errors import AgentError

    steps = [
        {"target": "hop_b", "task": "ok"},
        {"target": "hop_c", "task": "boom", "input": {"fail": "disk full"}},
    ]
    with pytest.raises(AgentError) as info:
        await rt.call("hop_a", "chain", {"steps": steps})
    assert info.value.agent == "hop_c" and info.value.message == "disk full"
    assert info.value.details.get("completedSteps") == 1 or info.value.remote


async def test_a_callee_answering_failed_raises_agent_error_and_is_recorded_failed(rt: Runtime) -> None:
    from a2a.errors import AgentError

    assert rt.history is not None
    conversation = uuid.uuid4().hex
    with pytest.raises(AgentError) as info:
        await rt.call(
            "hop_a",
            "delegate",
            {"target": "hop_b", "task": "copy", "input": {"report_failure": "no space left"}},
            conversation_id=conversation,
        )
    error = info.value
    assert (error.code, error.agent, error.message) == ("AGENT_ERROR", "hop_b", "no space left")
    (interaction,) = await rt.history.interactions(conversation)
    assert (interaction.target, interaction.success) == ("hop_b", False)
    assert interaction.error_code == "AGENT_ERROR"
    # In a chain it stops there; in a fan-out it is that branch's failed response.
    steps = [
        {"target": "hop_b", "task": "first", "input": {"report_failure": "bad input"}},
        {"target": "hop_c", "task": "never sent"},
    ]
    with pytest.raises(AgentError) as chained:
        await rt.call("hop_a", "chain", {"steps": steps})
    assert (chained.value.agent, chained.value.message) == ("hop_b", "bad input")
    out = await rt.call("hop_a", "fan", {"steps": steps})
    failed, ok = out["responses"]
    assert (failed["status"], failed["error_code"], failed["error_agent"], failed["error"]) == (
        "failed",
        "AGENT_ERROR",
        "hop_b",
        "bad input",
    )
    assert ok["status"] == "success" and out["succeeded"] == [1]


@pytest.mark.parametrize(
    ("gather", "quorum", "successes", "max_seconds"),
    [("all", None, 3, 3.0), ("first", None, 1, 1.0), ("quorum", 2, 2, 1.0)],
)
async def test_parallel_fan_out_gather_policies(
    rt: Runtime, gather: str, quorum: int | None, successes: int, max_seconds: float
) -> None:
    steps = [
        {"target": "hop_b", "task": "fast", "input": {"sleep": 0.05}},
        {"target": "hop_c", "task": "medium", "input": {"sleep": 0.2}},
        {"target": "hop_d", "task": "slow", "input": {"sleep": 2.0}},
    ]
    start = anyio.current_time()
    out = await rt.call("hop_a", "fan", {"steps": steps, "gather": gather, "quorum": quorum})
    elapsed = anyio.current_time() - start
    assert len(out["succeeded"]) == successes
    assert out["dropped"] == 3 - successes  # late or cancelled branches are counted
    assert elapsed < max_seconds
    assert out["responses"][0]["target_employee"] == "hop_b"


async def test_fan_out_reports_failed_branches_without_losing_the_others(rt: Runtime) -> None:
    steps = [{"target": "hop_b", "task": "ok"}, {"target": "hop_c", "task": "bad", "input": {"fail": "nope"}}]
    out = await rt.call("hop_a", "fan", {"steps": steps})
    ok, failed = out["responses"]
    assert ok["status"] == "success"
    assert (failed["status"], failed["error_code"], failed["error_agent"]) == (
        "failed",
        "AGENT_ERROR",
        "hop_c",
    )


async def test_audit_records_are_kept_in_jetstream_filterable_and_redacted(
    rt: Runtime, cluster: Settings
) -> None:
    conversation = uuid.uuid4().hex
    await rt.call(
        "hop_a",
        "delegate",
        {"target": "hop_b", "task": "audit me", "objective": "mail jane.doe@example.com"},
        user_id="carol",
        conversation_id=conversation,
    )
    with pytest.raises(Exception):  # noqa: B017 - any typed error; the record is what matters
        await rt.call(
            "mute",
            "forward",
            {"target": "hop_b", "action": "whoami"},
            user_id="carol",
            conversation_id=conversation,
        )
    transport = rt.bus.transport
    assert isinstance(transport, NatsTransport)
    expected = {("client", "hop_a", "ok"), ("hop_a", "hop_b", "ok"), ("mute", "hop_b", "refused")}
    records: list[Any] = []
    with anyio.fail_after(5):  # records arrive in batches from three processes
        while not expected <= {(r.origin, r.target, r.outcome) for r in records}:
            await anyio.sleep(0.1)
            records = await read_audit(
                transport, cluster.namespace, AuditFilter(conversation_id=conversation)
            )
    assert all(r.user_id == "carol" for r in records)
    delegated = next(r for r in records if (r.origin, r.target) == ("hop_a", "hop_b"))
    assert delegated.objective == "mail [EMAIL]"
    refused = await read_audit(
        transport, cluster.namespace, AuditFilter(outcome="refused", user_id="carol", agent="mute")
    )
    assert refused and all(r.error_code == "PERMISSION_DENIED" for r in refused)
    out = await anyio.run_process(
        [sys.executable, "-m", "a2a", "audit", "--conversation", conversation, "--json"],
        env=agent_env(cluster),
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    stdout = out.stdout.decode()
    assert len(stdout.strip().splitlines()) == len(records) and "jane.doe" not in stdout


async def test_history_command_shows_the_interactions(rt: Runtime, cluster: Settings) -> None:
    conversation = await seed_conversation(rt, 3, user="dave")
    await rt.call(
        "hop_a",
        "delegate",
        {"target": "hop_b", "task": "summarize the bug"},
        user_id="dave",
        conversation_id=conversation,
    )
    out = await anyio.run_process(
        [sys.executable, "-m", "a2a", "history", conversation],
        env={**agent_env(cluster), "COLUMNS": "200"},
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    stdout = out.stdout.decode()
    assert "user dave" in stdout and "hop_a → hop_b" in stdout and "summarize the bug" in stdout
    assert "Messages (the last 5)" in stdout and "message 2:" in stdout  # 3 seeded, the call and its answer
    assert "summary:" in stdout  # kept up to date by the capture
    shorter = await anyio.run_process(
        [sys.executable, "-m", "a2a", "history", conversation, "--messages", "1"],
        env={**agent_env(cluster), "COLUMNS": "200"},
        cwd=ROOT,
        check=False,
    )
    assert "Messages (the last 1)" in shorter.stdout.decode()


async def test_a_conversation_summary_travels_redacted_when_the_filter_asks_for_it(rt: Runtime) -> None:
    conversation = await seed_conversation(rt, 6)
    assert rt.history is not None
    await rt.history.set_summary(conversation, "The user wants the parser fixed; mail jane.doe@example.com")
    spec = {
        "target": "hop_b",
        "task": "Fix the parser.",
        "context": {"last_messages": 1, "include_summary": True},
        "max_context_tokens": 200,
    }
    response = await rt.call("hop_a", "delegate", spec, user_id="alice", conversation_id=conversation)
    seen = received(response)
    assert seen["summary"] == "The user wants the parser fixed; mail [EMAIL]"
    spec["context"] = {"last_messages": 1}
    response = await rt.call("hop_a", "delegate", spec, user_id="alice", conversation_id=conversation)
    assert received(response)["summary"] is None


async def test_facts_a_delegate_learns_are_kept_for_the_user_and_handed_to_later_delegations(
    rt: Runtime,
) -> None:
    user, other = f"dana-{uuid.uuid4().hex[:6]}", f"eli-{uuid.uuid4().hex[:6]}"
    learn = {"target": "hop_b", "task": "learn", "input": {"learn": ["prefers metric units", PII]}}
    await rt.call("hop_a", "delegate", learn, user_id=user)
    facts = await rt.facts(user)
    assert facts[1] == "prefers metric units" and len(facts) == 2
    assert "jane.doe@example.com" not in facts[0] and "4111" not in facts[0]  # kept redacted
    later = await rt.call("hop_a", "delegate", {"target": "hop_c", "task": "plan"}, user_id=user)
    assert received(later)["handoff"]["facts"] == facts
    again = {**learn, "input": {"learn": ["prefers metric units"]}}
    await rt.call("hop_a", "delegate", again, user_id=user)
    assert (await rt.facts(user))[0] == "prefers metric units" and len(await rt.facts(user)) == 2
    theirs = await rt.call("hop_a", "delegate", {"target": "hop_c", "task": "plan"}, user_id=other)
    assert not (received(theirs)["handoff"] or {}).get("facts") and await rt.facts(other) == []


async def test_seed_002s_optional_fields_travel_both_ways(rt: Runtime) -> None:
    """handoff_data.references reach the callee; used_sources, confidence, requires_followup
    and duration_ms come back to the caller; max_context_tokens left out is seed 000's 4000."""
    conversation = uuid.uuid4().hex
    reference = {"owner_scope": "carol", "source_id": "receipt-17.jpg", "relevance": 0.75}
    spec = {
        "target": "hop_b",
        "task": "extract the receipt",
        "references": [reference],
        "input": {"followup": True},
    }
    started = time.monotonic()
    response = await rt.call("hop_a", "delegate", spec, user_id="carol", conversation_id=conversation)
    elapsed_ms = (time.monotonic() - started) * 1000
    seen = received(response)
    wire_reference = {"ownerScope": "carol", "sourceId": "receipt-17.jpg", "relevance": 0.75}
    assert seen["handoff"]["references"] == [wire_reference]
    assert seen["max_context_tokens"] == 4000
    assert response["used_sources"] == [wire_reference]
    assert (response["confidence"], response["requires_followup"]) == (80, True)
    assert 0 < response["duration_ms"] < elapsed_ms
    assert rt.history is not None
    (interaction,) = await rt.history.interactions(conversation)
    assert interaction.duration_ms == round(response["duration_ms"], 3)
    plain = await rt.call("hop_a", "delegate", {"target": "hop_b", "task": "again"}, user_id="carol")
    assert plain["used_sources"] == [] and plain["requires_followup"] is False
