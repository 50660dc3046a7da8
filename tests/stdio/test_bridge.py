"""A well-behaved program served as a stdio agent, and one that breaks the protocol in every way
that must neither crash the bridge nor fail anything but the request concerned."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

import pytest

from a2a import Settings
from a2a.errors import AgentError, BudgetExceeded, InvalidParams, PermissionDenied
from a2a.stdio import stdio_agent
from tests.adapters.plain_agents import boss_agent

from .conftest import FAST, command, serving, until

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_run_returns_the_draft_and_prompt_the_whole_response(settings: Settings) -> None:
    async with serving(settings) as (rt, peer):
        assert await rt.call("local", "run", {"text": "hello"}) == "local says hello"
        history = [
            {"role": "remote_agent" if i % 2 else "local_agent", "text": f"turn {i}"} for i in range(8)
        ]
        out = await rt.call(
            "local",
            "prompt",
            {
                "objective": "review this API",
                "remote_message": "show",
                "history": history,
                "turn_index": 3,
                "mode": "semi_auto",
                "constraints": {"max_history_turns": 2, "local_turn_timeout_ms": 2500},
            },
            conversation_id="conv-1",
        )
        assert out["status"] == "ok" and out["reason"] == "" and out["metrics"] == {"latency_ms": 1}
        sent = json.loads(out["draft_message"])
        assert sent["type"] == "desktop.local_prompt.request" and sent["request_id"].startswith("req_")
        assert sent["objective"] == "review this API" and sent["remote_message"] == "show"
        assert sent["turn_index"] == 3 and sent["mode"] == "semi_auto"
        assert sent["profile_id"] == "local" and sent["session_id"] == "conv-1"
        assert sent["history"] == history[-2:]  # the newest two turns, as the constraints say
        assert 2000 < sent["constraints"]["local_turn_timeout_ms"] <= 2500  # the time it actually has
        with pytest.raises(InvalidParams):
            await rt.call("local", "prompt", {"objective": "x", "mode": "sometimes"})
        with pytest.raises(InvalidParams):
            await rt.call("local", "run", {"text": ""})
        assert peer.stats.requests == 2 and peer.stats.answered == 2
        assert sum(peer.stats.violations.by_kind.values()) == 0


async def test_the_agent_declares_its_actions_and_default_action() -> None:
    agent = stdio_agent("reviewer", command(), pool=3, capabilities=["review"], config=FAST)
    assert set(agent.actions) == {"run", "prompt"}
    assert agent.metadata == {"defaultAction": "run", "framework": "stdio"}
    assert agent.max_concurrency == 3
    with pytest.raises(ValueError, match="not found"):
        stdio_agent("reviewer", ["no-such-program-anywhere"])
    with pytest.raises(ValueError, match="pool"):
        stdio_agent("reviewer", command(), pool=0)


async def test_an_error_status_and_progress_reach_the_caller(settings: Settings) -> None:
    async with serving(settings) as (rt, peer):
        with pytest.raises(AgentError, match="cannot do that") as caught:
            await rt.call("local", "run", {"text": "error"})
        assert caught.value.code == "AGENT_ERROR"
        updates: list[Any] = []
        assert await rt.call("local", "run", {"text": "progress"}, on_progress=updates.append) == "done"
        assert updates == [{"text": "step 0"}, {"text": "step 1"}, {"text": "step 2"}]
        assert peer.stats.progress == 3


async def test_protocol_violations_are_counted_and_never_fail_another_request(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "a2a.stdio")
    async with serving(settings, config=replace(FAST, max_line=64 * 1024)) as (rt, peer):
        (first,) = [p.pid for p in peer.processes()]
        violations = peer.stats.violations.by_kind
        assert await rt.call("local", "run", {"text": "garbage"}) == "after garbage"
        assert violations["not json"] == 2 and violations["not a frame"] == 2
        assert await rt.call("local", "run", {"text": "wrongid"}) == "right"
        assert violations["unknown request_id"] == 1
        assert await rt.call("local", "run", {"text": "twice"}) == "first"
        assert await rt.call("local", "run", {"text": "next"}) == "local says next"  # not "second"
        assert violations["duplicate terminal"] == 1
        with pytest.raises(AgentError, match="malformed response frame"):
            await rt.call("local", "run", {"text": "malformed"})
        with pytest.raises(AgentError, match="half of a surrogate pair"):  # not JSON, still its answer
            await rt.call("local", "run", {"text": "halfpair"})
        assert await rt.call("local", "run", {"text": f"huge:{1 << 20}"}) == "after huge"
        assert violations["oversized line"] == 1
        assert await rt.call("local", "run", {"text": "flood:2000000"}) == "after flood"
        await until(lambda: peer.stats.stderr_lines == 20000)  # all read, none blocked the answer
        assert await rt.call("local", "run", {"text": "still here"}) == "local says still here"
        assert [p.pid for p in peer.processes()] == [first]  # one process took it all
        assert peer.stats.crashes == peer.stats.killed == 0
    warned = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert any("local[0]" in m and "not json" in m for m in warned)
    stderr = [r.getMessage() for r in caplog.records if r.getMessage().startswith("local[0] stderr:")]
    assert 10 < len(stderr) < 1000  # logged at a bounded rate, the rest counted
    assert any(m.endswith("lines not logged)") for m in stderr)


async def test_the_tools_a_program_reports_are_authorized_and_recorded(settings: Settings) -> None:
    async with serving(settings) as (rt, _peer):
        await rt.serve(boss_agent())
        out = await rt.call("local", "prompt", {"objective": "o", "remote_message": "tools:lookup,grep"})
        assert (out["draft_message"], out["tools_used"]) == ("used lookup,grep", ["lookup", "grep"])
        done = await rt.call("boss", "run", {"target": "local", "text": "tools:lookup,grep"})
        assert done == {"result": "used lookup,grep", "tool_calls": ["lookup", "grep"]}
        narrowed = {"target": "local", "text": "tools:lookup,grep", "allowed_tools": ["lookup"]}
        with pytest.raises(PermissionDenied, match="'grep' is not among them"):
            await rt.call("boss", "run", narrowed)
        assert (await rt.call("boss", "run", {**narrowed, "text": "tools:lookup"}))["tool_calls"] == [
            "lookup"
        ]


async def test_the_tokens_a_program_reports_are_the_calls_usage_and_count_against_its_budget(
    settings: Settings,
) -> None:
    async with serving(settings) as (rt, _peer):
        spent = await rt.request("local", "run", {"text": "tokens:120,30"})
        assert spent.payload.result == "spent"
        assert spent.payload.usage is not None and spent.payload.usage.total == 150
        ignored = await rt.request("local", "run", {"text": 'tokens:-5,"many"'})
        assert ignored.payload.usage is None or ignored.payload.usage.total == 0
        with pytest.raises(BudgetExceeded):
            await rt.call("local", "run", {"text": "tokens:120,30"}, budget=100)
