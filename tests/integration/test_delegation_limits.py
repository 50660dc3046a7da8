"""Every delegation limit tripped across real processes, and the system still serving after.

Agents (tests/delegates.py) run in three `a2a serve` processes with the roster
tests/roster.yaml; the test process is a fourth, acting as the user.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from a2a import A2AError, Runtime, Settings
from a2a.errors import BudgetExceeded, CycleDetected, DeadlineExceeded, MaxDepthExceeded, PermissionDenied
from bus import codec
from bus.handoff import Delegation
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.helpers import raw_exchange
from tests.integration.conftest import AGENTS

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def nest(*hops: str, leaf: str = "whoami", **leaf_params: Any) -> dict[str, Any]:
    """Parameters for hops[0].forward that walk the remaining hops and end in ``leaf``."""
    params: dict[str, Any] = {"target": hops[-1], "action": leaf, "params": leaf_params or None}
    for hop in reversed(hops[1:-1]):
        params = {"target": hop, "action": "forward", "params": params}
    return params


async def still_serving(rt: Runtime) -> None:
    """Nothing else broke: an ordinary three-process chain still works."""
    out = await rt.call("hop_a", "forward", nest("hop_a", "hop_b", "hop_c"))
    assert out["result"]["result"]["agent"] == "hop_c"


async def raw_request(rt: Runtime, agent: str, **fields: Any) -> dict[str, Any]:
    """An envelope published by a plain NATS client, bypassing every caller-side check."""
    meta = {"timestamp": int(time.time() * 1000), "correlation_id": uuid.uuid4().hex, "ttl_ms": 5000}
    meta.update(fields.pop("meta", {}))
    source = fields.pop("source", "raw")
    depth = meta.get("depth", 0)
    if depth and "call_chain" not in meta:  # a lineage the callee accepts: depth agents, the sender last
        meta["call_chain"] = [f"up{i}" for i in range(depth - 1)] + [source]
    env = RequestEnvelope(
        message_id=uuid.uuid4().hex,
        source_agent_id=source,
        target_agent_id=agent,
        conversation_id=fields.pop("conversation", uuid.uuid4().hex),
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action=fields.pop("action", "whoami"), parameters=fields.pop("params", None)),
        metadata=Metadata(**meta),
        **fields,
    )
    return await raw_exchange(rt.bus.transport, rt.bus.subjects.agent(agent), codec.encode_envelope(env))


def error_of(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["type"] == "error", reply
    return reply["payload"]["error"]  # type: ignore[no-any-return]


# -- depth ---------------------------------------------------------------------------


async def test_depth_limit_caller_side_with_seed_002_depth_two(rt: Runtime) -> None:
    # shallow has max_depth 2: user -> shallow (0) -> hop_b (1) allowed, hop_b -> hop_c (2) refused
    ok = await rt.call("shallow", "forward", nest("shallow", "hop_b"))
    assert ok["result"]["agent"] == "hop_b"
    with pytest.raises(MaxDepthExceeded) as info:
        await rt.call("shallow", "forward", nest("shallow", "hop_b", "hop_c"))
    assert info.value.agent == "hop_b" and info.value.hop == 2
    await still_serving(rt)


async def test_depth_limit_from_the_runtime_default_and_callee_recheck(cluster: Settings) -> None:
    async with Runtime(Settings(**{**_fields(cluster), "max_depth": 3})) as rt:
        await rt.wait_for_agents(AGENTS)
        with pytest.raises(MaxDepthExceeded) as info:
            await rt.call("hop_a", "forward", nest("hop_a", "hop_b", "hop_c", "hop_d"))
        assert info.value.details["maxDepth"] == 3
        error = error_of(await raw_request(rt, "hop_b", source="hop_a", meta={"depth": 4, "max_depth": 4}))
        assert error["code"] == "MAX_DEPTH_EXCEEDED" and error["agent"] == "hop_b"
        await still_serving(rt)


# -- cycles --------------------------------------------------------------------------


async def test_an_agent_already_on_the_chain_is_a_cycle(rt: Runtime) -> None:
    with pytest.raises(CycleDetected) as info:
        await rt.call("hop_a", "forward", nest("hop_a", "hop_b", "hop_a"))
    assert info.value.details["callChain"] == ["hop_a", "hop_b", "hop_a"]
    error = error_of(
        await raw_request(rt, "hop_b", source="hop_a", meta={"depth": 2, "call_chain": ["hop_b", "hop_a"]})
    )
    assert error["code"] == "CYCLE_DETECTED"
    await still_serving(rt)


async def test_the_same_objective_again_after_its_answer_is_refused_for_a_while(rt: Runtime) -> None:
    step = {"target": "hop_b", "objective": "extract receipt", "task": "extract"}
    with pytest.raises(CycleDetected, match="answered already") as info:
        await rt.call("hop_a", "chain", {"steps": [step, step]})
    assert info.value.agent == "hop_a" and info.value.details["answered"] is True
    # Another objective, or the same one in another conversation, is no loop.
    await rt.call("hop_a", "chain", {"steps": [step, {**step, "objective": "analyze document"}]})
    await rt.call("hop_a", "chain", {"steps": [step]})
    # Callee side, across processes: the second request, after the first was answered.
    delegation = Delegation(task="t", objective="same goal")
    conversation = uuid.uuid4().hex
    replies = [
        await raw_request(rt, "hop_b", action="whoami", delegation=delegation, conversation=conversation)
        for _ in range(2)
    ]
    codes = [r["payload"].get("error", {}).get("code", "ok") for r in replies]
    assert codes == ["ok", "CYCLE_DETECTED"]
    assert "answered already" in replies[1]["payload"]["error"]["message"]
    other = await raw_request(
        rt,
        "hop_b",
        action="whoami",
        delegation=Delegation(task="t", objective="another goal"),
        conversation=conversation,
    )
    assert "error" not in other["payload"] or other["payload"]["error"] is None
    await still_serving(rt)


async def test_the_same_objective_in_progress_twice_is_refused(rt: Runtime) -> None:
    step = {"target": "hop_b", "objective": "extract receipt", "task": "extract", "input": {"sleep": 0.5}}
    out = await rt.call("hop_a", "fan", {"steps": [step, step]})
    statuses = sorted((r["status"], r.get("error_code")) for r in out["responses"])
    assert statuses == [("failed", "CYCLE_DETECTED"), ("success", None)]
    different = await rt.call("hop_a", "fan", {"steps": [step, {**step, "objective": "analyze document"}]})
    assert [r["status"] for r in different["responses"]] == ["success", "success"]
    # Callee side, across instances: the first holder is recorded in Redis.
    delegation = Delegation(task="t", objective="same goal")
    conversation = uuid.uuid4().hex

    async def send() -> dict[str, Any]:
        return await raw_request(
            rt,
            "hop_b",
            action="sleep",
            params={"seconds": 0.5},
            delegation=delegation,
            conversation=conversation,
        )

    replies: list[dict[str, Any]] = []

    async def collect() -> None:
        replies.append(await send())

    async with anyio.create_task_group() as tg:
        tg.start_soon(collect)
        await anyio.sleep(0.1)
        tg.start_soon(collect)
    codes = sorted(r["payload"].get("error", {}).get("code", "ok") for r in replies)
    assert codes == ["CYCLE_DETECTED", "ok"]
    await still_serving(rt)


# -- fan-out -------------------------------------------------------------------------


async def test_fan_out_limit_counts_concurrent_delegates(rt: Runtime) -> None:
    outcomes = await rt.call(
        "hop_a", "parallel", {"n": 4, "target": "hop_b", "action": "sleep", "params": {"seconds": 0.4}}
    )
    assert outcomes == ["FAN_OUT_EXCEEDED", "ok", "ok", "ok"]
    refused = await rt.call("hop_a", "fan", {"steps": [{"target": "hop_b"}] * 4})
    assert refused == {"error": "FAN_OUT_EXCEEDED", "agent": "hop_a"}
    error = error_of(
        await raw_request(rt, "hop_b", source="hop_a", meta={"depth": 1, "fan_out": 4, "max_fan_out": 3})
    )
    assert error["code"] == "FAN_OUT_EXCEEDED"
    await still_serving(rt)


# -- deadlines and cancellation ----------------------------------------------------------


async def test_a_child_deadline_never_outlives_its_parent(rt: Runtime) -> None:
    out = await rt.call(
        "hop_a", "forward", {"target": "hop_b", "action": "remaining", "timeout": 60}, timeout=2.0
    )
    assert 0 < out["result"]["remaining"] <= 2.0


async def test_a_timed_out_caller_cancels_its_children_across_processes(rt: Runtime, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await rt.call(
            "hop_a",
            "forward",
            nest("hop_a", "hop_b", "hop_c", leaf="sleep", seconds=30, marker=str(marker)),
            timeout=1.0,
        )
    assert anyio.current_time() - start < 1.5
    with anyio.fail_after(3):
        while not marker.exists():
            await anyio.sleep(0.05)
    assert marker.read_text() == "cancelled hop_c"
    await still_serving(rt)


async def test_a_cancelled_caller_cancels_its_children_across_processes(rt: Runtime, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    with anyio.move_on_after(0.5):
        await rt.call(
            "hop_a",
            "forward",
            nest("hop_a", "hop_b", leaf="sleep", seconds=30, marker=str(marker)),
            timeout=30,
        )
    with anyio.fail_after(3):
        while not marker.exists():
            await anyio.sleep(0.05)
    assert marker.read_text() == "cancelled hop_b"
    await still_serving(rt)


# -- token budget ------------------------------------------------------------------------


async def test_budget_is_reserved_before_dispatch_and_debited_by_usage(rt: Runtime) -> None:
    response = await rt.request(
        "hop_a", "forward", {"target": "hop_b", "action": "spend", "params": {"completion": 300}}, budget=1000
    )
    assert response.payload.result["result"] == {"left": 700}
    assert response.payload.usage is not None and response.payload.usage.total == 300
    # A reservation larger than what is left is refused before anything is sent.
    with pytest.raises(BudgetExceeded) as info:
        await rt.call("hop_a", "forward", {"target": "hop_b", "action": "whoami", "budget": 500}, budget=100)
    assert info.value.agent == "hop_a" and info.value.details == {"requested": 500, "left": 100}
    # Overspending in the callee ends the call with BUDGET_EXCEEDED, usage reported.
    with pytest.raises(BudgetExceeded) as over:
        await rt.call(
            "hop_a",
            "forward",
            {"target": "hop_b", "action": "spend", "params": {"completion": 150}},
            budget=100,
        )
    assert over.value.agent == "hop_b"
    # The callee refuses on arrival what its estimate says the budget cannot pay.
    with pytest.raises(BudgetExceeded) as estimate:
        await rt.call("hop_b", "expensive", budget=100)
    assert estimate.value.details["estimate"] == 500
    assert await rt.call("hop_b", "expensive", budget=600) == "done"
    await still_serving(rt)


# -- permissions -----------------------------------------------------------------------


async def test_allow_sub_agent_calls_and_can_invoke(rt: Runtime) -> None:
    with pytest.raises(PermissionDenied, match="allow_sub_agent_calls"):
        await rt.call("mute", "forward", nest("mute", "hop_b"))
    assert (await rt.call("picky", "forward", nest("picky", "hop_b")))["result"]["agent"] == "hop_b"
    with pytest.raises(PermissionDenied, match="may not invoke hop_c"):
        await rt.call("picky", "forward", nest("picky", "hop_c"))
    error = error_of(await raw_request(rt, "hop_b", source="mute", meta={"depth": 1}))
    assert error["code"] == "PERMISSION_DENIED" and error["agent"] == "hop_b"
    error = error_of(await raw_request(rt, "hop_c", source="picky", meta={"depth": 1}))
    assert error["code"] == "PERMISSION_DENIED"
    await still_serving(rt)


async def test_allowed_tools_only_narrow_along_the_chain(rt: Runtime) -> None:
    ok = await rt.call(
        "hop_a",
        "forward",
        {
            "target": "hop_b",
            "action": "use_tool",
            "params": {"tool": "read_file"},
            "allowed_tools": ["read_file"],
        },
    )
    assert ok["result"] == {"used": "read_file"}
    with pytest.raises(PermissionDenied, match="limited this call to tools"):
        await rt.call(
            "hop_a",
            "forward",
            {
                "target": "hop_b",
                "action": "use_tool",
                "params": {"tool": "write_file"},
                "allowed_tools": ["read_file"],
            },
        )
    # hop_b passes no restriction on to hop_c, yet hop_c cannot regain write_file.
    inner = {"target": "hop_c", "action": "use_tool", "params": {"tool": "write_file"}}
    with pytest.raises(PermissionDenied) as info:
        await rt.call(
            "hop_a",
            "forward",
            {
                "target": "hop_b",
                "action": "forward",
                "params": inner,
                "allowed_tools": ["read_file", "shell"],
            },
        )
    assert info.value.agent == "hop_c"
    # Roster tools and modes are checked where the tool is used.
    with pytest.raises(PermissionDenied, match="not authorized to use tool 'shell'"):
        await rt.call("hop_b", "use_tool", {"tool": "shell"})
    with pytest.raises(PermissionDenied, match="read mode"):
        await rt.call("reader_only", "use_tool", {"tool": "write_file"})
    assert await rt.call("reader_only", "use_tool", {"tool": "read_file"}) == {"used": "read_file"}
    await still_serving(rt)


async def test_allow_nested_calls_false_stops_further_delegation(rt: Runtime) -> None:
    params = {
        "target": "hop_b",
        "action": "forward",
        "params": {"target": "hop_c", "action": "whoami"},
        "allow_nested_calls": False,
    }
    with pytest.raises(PermissionDenied, match="nested") as info:
        await rt.call("hop_a", "forward", params)
    assert info.value.agent == "hop_b"
    # The callee re-checks: hop_b's request carried maxDepth = depth + 1, so hop_c refuses the hop.
    error = error_of(await raw_request(rt, "hop_c", source="hop_b", meta={"depth": 2, "max_depth": 2}))
    assert error["code"] == "MAX_DEPTH_EXCEEDED"
    await still_serving(rt)


async def test_a_delegation_that_leaves_allow_nested_calls_out_cannot_call_further(rt: Runtime) -> None:
    """Seed 000: allow_nested_calls defaults to false; the callee's own call is refused."""
    spec: dict[str, Any] = {"target": "hop_b", "task": "look it up", "input": {"call": "hop_c"}}
    with pytest.raises(PermissionDenied, match="nested") as info:
        await rt.call("hop_a", "delegate", spec)
    assert info.value.agent == "hop_b"
    allowed = await rt.call("hop_a", "delegate", {**spec, "allow_nested_calls": True})
    assert allowed["status"] == "success" and allowed["target_employee"] == "hop_b"


# -- user isolation ----------------------------------------------------------------------


async def test_a_hop_for_another_user_is_refused(rt: Runtime) -> None:
    conversation = uuid.uuid4().hex
    me = await rt.call(
        "hop_a", "forward", nest("hop_a", "hop_b"), user_id="alice", conversation_id=conversation
    )
    assert me["result"]["user"] == "alice" and me["result"]["conversation"] == conversation
    with pytest.raises(PermissionDenied, match="another user"):
        await rt.call("hop_a", "whoami", user_id="mallory", conversation_id=conversation)
    error = error_of(
        await raw_request(
            rt, "hop_b", source="hop_a", conversation=conversation, user_id="mallory", meta={"depth": 1}
        )
    )
    assert error["code"] == "PERMISSION_DENIED"
    # A delegation thread belongs to its user: reusing it for another user is refused.
    first = await rt.call("hop_a", "delegate", {"target": "hop_b", "task": "remember this"}, user_id="alice")
    thread = first["child_session_id"]
    again = await rt.call(
        "hop_a",
        "delegate",
        {"target": "hop_b", "task": "and this", "thread_mode": "reuse", "thread_id": thread},
        user_id="alice",
    )
    assert again["child_session_id"] == thread and again["status"] == "success"
    with pytest.raises(PermissionDenied, match="belongs to another user"):
        await rt.call(
            "hop_a",
            "delegate",
            {"target": "hop_b", "task": "steal", "thread_mode": "reuse", "thread_id": thread},
            user_id="mallory",
        )
    raw = await raw_request(
        rt,
        "hop_b",
        action="task",
        source="hop_a",
        user_id="mallory",
        meta={"depth": 1},
        delegation=Delegation(task="steal", thread_mode="reuse", thread_id=thread),
    )
    assert error_of(raw)["code"] == "PERMISSION_DENIED"
    await still_serving(rt)


def _fields(settings: Settings) -> dict[str, Any]:
    return {f: getattr(settings, f) for f in settings.__struct_fields__}


async def test_every_refusal_is_a_typed_error_with_agent_and_hop(rt: Runtime) -> None:
    cases = [
        ("shallow", nest("shallow", "hop_b", "hop_c")),
        ("hop_a", nest("hop_a", "hop_b", "hop_a")),
        ("mute", nest("mute", "hop_b")),
    ]
    for agent, params in cases:
        with pytest.raises(A2AError) as info:
            await rt.call(agent, "forward", params)
        assert info.value.code in {"MAX_DEPTH_EXCEEDED", "CYCLE_DETECTED", "PERMISSION_DENIED"}
        assert info.value.agent and info.value.hop is not None and info.value.remote
