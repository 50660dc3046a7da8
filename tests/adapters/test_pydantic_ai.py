"""The pydantic-ai adapter against real servers: result, usage and budget, progress,
cancellation and deadline reaching the run's tools, typed bus errors, lineage of tool calls.

The pydantic-ai agents run the scripted fake model of ``tests/adapters/pydantic_ai_agents.py``
(10 + 5 tokens a response), or pydantic-ai's own ``TestModel``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import DeferredToolRequests, RunContext, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

from a2a import Runtime, Settings
from a2a.adapters import agent_tool, delegate_tool
from a2a.adapters.pydantic_ai import from_pydantic_ai, pydantic_ai_tools
from a2a.errors import BudgetExceeded, CycleDetected, DeadlineExceeded, InputRequired, PermissionDenied
from tests.adapters.plain_agents import (
    DELEGATED,
    DELEGATION,
    Bus,
    boss_agent,
    outer_agent,
    probe_agent,
    worker_agent,
)
from tests.adapters.pydantic_ai_agents import SHOWN, Reply, build, scripted_model

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

PER_RESPONSE = 15  # tokens the scripted model reports for each response


@pytest.fixture
async def bus(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bus]:
    monkeypatch.setenv("A2A_TEST_MARKS", str(tmp_path))
    async with Runtime(settings) as rt:
        found = Bus(rt, tmp_path)
        await rt.serve(
            build("pa"),
            build("pas", output_type=Reply),
            probe_agent(found.probed),
            outer_agent("pa"),
            worker_agent(found.delegated),
            boss_agent(),
        )
        yield found


async def test_the_answer_is_the_runs_text_and_a_structured_output_comes_back_as_json(bus: Bus) -> None:
    assert await bus.rt.call("pa", "run", {"text": "echo: hello"}) == "pa says hello"
    assert await bus.rt.call("pas", "run", {"text": "echo: hello"}) == {
        "agent": "pas",
        "text": "pas says hello",
    }
    agent = build("meta")
    assert agent.metadata["defaultAction"] == "run" and agent.metadata["framework"] == "pydantic-ai"
    assert agent.actions["run"].input_schema is not None
    assert "required" not in agent.actions["run"].input_schema  # a delegation brings its task instead


async def test_tokens_are_reported_and_counted_into_the_callers_usage(bus: Bus) -> None:
    response = await bus.rt.request("pa", "run", {"text": "ask: probe: hi"})
    usage = response.payload.usage
    assert usage is not None  # two model responses, the probe reports none
    assert (usage.prompt, usage.completion, usage.total) == (20, 10, 2 * PER_RESPONSE)
    outer = await bus.rt.request("outer", "run", {"text": "echo: x"})
    assert outer.payload.result == {"answer": "pa says x", "used": PER_RESPONSE}
    assert outer.payload.usage is not None and outer.payload.usage.total == PER_RESPONSE


async def test_a_small_budget_is_refused_by_pydantic_ais_own_limit(bus: Bus) -> None:
    with pytest.raises(BudgetExceeded) as caught:
        await bus.rt.call("pa", "run", {"text": "ask: probe: hi"}, budget=PER_RESPONSE - 3)
    assert "pydantic-ai stopped at its usage limit" in caught.value.message
    assert caught.value.details["used"] == PER_RESPONSE
    # It stopped after the first response, before running the tool it asked for...
    assert bus.probed == []
    # ...and the tokens that response used still travel back with the error.
    assert caught.value.usage is not None and caught.value.usage.total == PER_RESPONSE
    # A budget of exactly what a run uses is enough.
    assert await bus.rt.call("pa", "run", {"text": "echo: ok"}, budget=PER_RESPONSE) == "pa says ok"


async def test_each_model_response_and_tool_result_is_sent_as_progress(bus: Bus) -> None:
    seen: list[Any] = []
    answer = await bus.rt.call("pa", "run", {"text": "ask: probe: hi"}, on_progress=seen.append)
    assert answer.startswith("pa got: ")
    assert [u["step"] for u in seen] == ["model", "tools", "model"]
    assert seen[0]["toolCalls"] == [{"tool": "call_agent", "args": '{"agent":"probe","text":"hi"}'}]
    assert seen[1]["results"][0]["tool"] == "call_agent" and seen[1]["results"][0]["outcome"] == "success"
    assert seen[2]["text"] == answer


async def test_a_cancel_reaches_the_tool_the_run_waits_in(bus: Bus) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(bus.rt.call, "pa", "run", {"text": "wait"})
        await bus.wait_for("pa.waiting")
        assert not (bus.marks / "pa.cancelled").exists()
        tg.cancel_scope.cancel()
    await bus.wait_for("pa.cancelled")


async def test_a_deadline_ends_the_run_and_its_tool(bus: Bus) -> None:
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await bus.rt.call("pa", "run", {"text": "wait"}, timeout=1.0)
    assert anyio.current_time() - start < 3
    await bus.wait_for("pa.cancelled")


async def test_a_cycle_refused_to_a_tool_comes_out_typed(bus: Bus) -> None:
    with pytest.raises(CycleDetected):
        await bus.rt.call("pa", "run", {"text": "ask: pa: echo: again"})
    # Through a plain agent too: outer -> pa -> pa.
    with pytest.raises(CycleDetected):
        await bus.rt.call("outer", "run", {"text": "ask: pa: echo: again"})


async def test_other_bus_errors_reach_the_model_as_a_failed_tool_result(bus: Bus) -> None:
    answer = await bus.rt.call("pa", "run", {"text": "ask: nobody-here: hi"})
    assert re.fullmatch(r"pa got: error: [A-Z_]+( from \S+)?: .+", answer), answer


async def test_a_tool_call_is_a_child_call_of_the_handler(bus: Bus) -> None:
    correlation_id = uuid.uuid4().hex
    response = await bus.rt.request(
        "pa",
        "run",
        {"text": "ask: probe: where am i"},
        user_id="u-7",
        conversation_id="c-7",
        correlation_id=correlation_id,
    )
    answer = response.payload.result
    seen = json.loads(answer.removeprefix("pa got: "))
    assert seen == bus.probed[0]
    assert seen["text"] == "where am i"
    assert seen["parent"] == response.metadata.key  # the handler's request is the parent
    assert seen["correlation"] == correlation_id  # in the call tree the caller named
    assert seen["chain"][-1] == "pa"
    assert (seen["depth"], seen["hop"]) == (1, 2)  # one below the handler (depth 0, hop 1)
    assert (seen["user"], seen["conversation"]) == ("u-7", "c-7")


async def test_testmodel_and_deps_built_per_call(bus: Bus) -> None:
    def who(ctx: RunContext[dict[str, Any]]) -> str:
        return f"user {ctx.deps['user']}"

    # TestModel calls every tool once, with arguments made up from its schema (the enum's value).
    tested = PydanticAgent(
        TestModel(), deps_type=dict, tools=[*pydantic_ai_tools([agent_tool(["probe"])]), Tool(who)]
    )
    agent = from_pydantic_ai(tested, name="tm", deps_of=lambda ctx: {"user": ctx.user_id})
    await bus.rt.serve(agent)
    response = await bus.rt.request("tm", "run", {"text": "anything"}, user_id="u-9")
    output = json.loads(response.payload.result)
    assert output["who"] == "user u-9"
    assert json.loads(output["call_agent"])["depth"] == 1
    assert response.payload.usage is not None and response.payload.usage.total > 0  # TestModel's estimate


async def test_a_tool_awaiting_approval_ends_the_call_as_input_required(bus: Bus) -> None:
    async def call_agent(agent: str, text: str) -> str:
        raise AssertionError("runs only once approved")

    gated = PydanticAgent(
        scripted_model("gated"),
        output_type=[str, DeferredToolRequests],
        tools=[Tool(call_agent, requires_approval=True)],
    )
    await bus.rt.serve(from_pydantic_ai(gated, name="gated"))
    with pytest.raises(InputRequired) as caught:
        await bus.rt.call("gated", "run", {"text": "ask: probe: delete everything"})
    (interrupt,) = caught.value.details["interrupts"]
    assert interrupt["tool"] == "call_agent" and interrupt["kind"] == "approval"
    assert interrupt["args"] == {"agent": "probe", "text": "delete everything"}


async def test_parallel_bus_tools_share_a_budget_and_see_what_the_run_has_spent(bus: Bus) -> None:
    async def two_calls(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returned))], usage=usage)
        calls = [ToolCallPart("call_agent", {"agent": "probe", "text": t}) for t in ("one", "two")]
        return ModelResponse(parts=list(calls), usage=usage)

    tools = pydantic_ai_tools([agent_tool()])
    await bus.rt.serve(from_pydantic_ai(PydanticAgent(FunctionModel(two_calls), tools=tools), name="twice"))
    response = await bus.rt.request("twice", "run", {"text": "go"}, budget=100)
    assert sorted(p["text"] for p in bus.probed) == ["one", "two"]
    # Each call could spend what was left after the first response was reported.
    assert [p["budget"] for p in bus.probed] == [100 - PER_RESPONSE] * 2
    assert response.payload.usage is not None and response.payload.usage.total == 2 * PER_RESPONSE


async def test_bus_tools_keep_their_json_schema() -> None:
    bus_tool = agent_tool(["probe", "pa"])
    (tool,) = pydantic_ai_tools([bus_tool])
    assert tool.name == "call_agent" and tool.description == bus_tool.description
    assert tool.tool_def.parameters_json_schema == bus_tool.input_schema


async def test_the_delegate_tool_passes_seed_000s_arguments_as_the_model_sees_them(bus: Bus) -> None:
    answer = await bus.rt.call("pa", "run", {"text": "delegate: " + json.dumps(DELEGATION)})
    assert answer == "pa got: worker did: tidy the logs"
    assert bus.delegated == [DELEGATED]
    shown = SHOWN["pa"]["delegate"]
    assert shown.parameters_json_schema == delegate_tool().input_schema
    assert shown.parameters_json_schema["required"] == ["agent_name", "task"]


async def test_a_failed_delegation_or_bad_arguments_reach_the_model_as_error_text(bus: Bus) -> None:
    failed = await bus.rt.call(
        "pa", "run", {"text": "delegate: " + json.dumps({**DELEGATION, "task": "fail"})}
    )
    assert failed == "pa got: error: AGENT_ERROR from worker: the disk is full"
    bad = {**DELEGATION, "allow_nested_calls": "sure"}
    refused = await bus.rt.call("pa", "run", {"text": "delegate: " + json.dumps(bad)})
    assert refused.startswith("pa got: error: INVALID_PARAMS: bad delegate arguments"), refused
    assert len(bus.delegated) == 1


async def test_the_agents_own_tools_are_authorized_and_reported(bus: Bus) -> None:
    used = await bus.rt.call("boss", "run", {"target": "pa", "text": "use: lookup"})
    assert used == {"result": "pa got: looked up", "tool_calls": ["lookup"]}
    asked = await bus.rt.call("boss", "run", {"target": "pa", "text": "ask: probe: hi"})
    assert asked["tool_calls"] == []  # a bus tool is a bus call
    with pytest.raises(PermissionDenied, match="'lookup' is not among them"):
        await bus.rt.call("boss", "run", {"target": "pa", "text": "use: lookup", "allowed_tools": ["wait"]})
