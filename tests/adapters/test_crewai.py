"""The CrewAI adapter against real servers: result, usage and budget, progress, cancellation
and deadline reaching the tool the crew waits in and its bus calls, parallel tool calls as
child calls, typed bus errors out of the crew's tools, human input, and the tools' schemas.

The crews run the scripted fake model of ``tests/adapters/crewai_agents.py`` (10 + 5 tokens a
model call, reported through CrewAI's usage events).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from crewai import Agent as CrewAgent
from crewai import Crew
from crewai.tasks.task_output import TaskOutput
from pydantic import ValidationError

from a2a import Agent, Context, Runtime, Settings
from a2a.adapters import agent_tool, call_tool, delegate_tool
from a2a.adapters.crewai import crewai_tools, from_crewai
from a2a.errors import (
    AgentError,
    BudgetExceeded,
    CycleDetected,
    DeadlineExceeded,
    InputRequired,
    PermissionDenied,
)
from tests.adapters.crewai_agents import PROMPT_TOKENS, SHOWN, ScriptedLLM, build, crew, tool_calls
from tests.adapters.plain_agents import (
    DELEGATED,
    DELEGATION,
    Bus,
    boss_agent,
    outer_agent,
    probe_agent,
    worker_agent,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:crewai.*"),  # CrewAI's own, internal
]

PER_CALL = PROMPT_TOKENS + 5  # tokens the scripted model reports for each call


def sleeper_agent(marks: Path) -> Agent:
    """A plain bus agent that waits until its call is withdrawn, leaving marks."""
    sleeper = Agent("sleeper")

    @sleeper.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> None:
        (marks / "sleeper.waiting").touch()
        try:
            await anyio.sleep_forever()
        finally:
            (marks / "sleeper.cancelled").touch()

    return sleeper


@pytest.fixture
async def bus(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bus]:
    monkeypatch.setenv("A2A_TEST_MARKS", str(tmp_path))
    async with Runtime(settings) as rt:
        found = Bus(rt, tmp_path)
        await rt.serve(
            build("crew"),
            probe_agent(found.probed),
            outer_agent("crew"),
            sleeper_agent(tmp_path),
            worker_agent(found.delegated),
            boss_agent(),
        )
        yield found


async def test_the_answer_is_the_crews_output(bus: Bus) -> None:
    assert await bus.rt.call("crew", "run", {"text": "echo: hello"}) == "crew says hello"
    answer = await bus.rt.call("crew", "run", {"text": "ask: probe: hi"})
    seen = json.loads(answer.removeprefix("crew got: "))
    assert seen == bus.probed[0] and seen["text"] == "hi"
    assert seen["chain"][-1] == "crew" and seen["depth"] == 1  # a child call of the handler
    agent = build("meta")
    assert agent.metadata == {"defaultAction": "run", "framework": "crewai"}
    assert agent.max_concurrency == 8  # a factory: a fresh crew per call


async def test_a_crew_object_is_copied_for_each_call(bus: Bus) -> None:
    template = crew("single")
    agent = from_crewai(template, name="single", inputs_of=lambda text, ctx: {"text": f"echo: {text}!"})
    assert agent.max_concurrency == 1
    await bus.rt.serve(agent)
    assert await bus.rt.call("single", "run", {"text": "one"}) == "single says one!"
    assert await bus.rt.call("single", "run", {"text": "two"}) == "single says two!"
    assert "{text}" in template.tasks[0].description  # never run, never interpolated


class TwoAtOnce(ScriptedLLM):
    """Asks ``probe`` two things in one response (CrewAI runs them in threads of a pool)."""

    def _answer(self, messages: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        results = [str(m["content"]) for m in messages if m.get("role") == "tool"]
        if results:
            return " | ".join(results)
        return tool_calls(*(("call_agent", {"agent": "probe", "text": t}) for t in ("one", "two")))


async def test_parallel_tool_calls_are_child_calls_and_agents_get_the_deadline(bus: Bus) -> None:
    made: list[Crew] = []

    def twice() -> Crew:
        made.append(crew("twice"))
        made[-1].agents[0].llm = TwoAtOnce(model="two-at-once", agent_name="twice")
        return made[-1]

    await bus.rt.serve(from_crewai(twice, name="twice"))
    answer = await bus.rt.call("twice", "run", {"text": "go"}, timeout=4.2)
    assert sorted(json.loads(part)["text"] for part in answer.split(" | ")) == ["one", "two"]
    assert [(p["depth"], p["chain"][-1]) for p in bus.probed] == [(1, "twice")] * 2
    (member,) = made[0].agents
    assert isinstance(member, CrewAgent) and member.max_execution_time == 5  # 4.2 s left at most, rounded up


async def test_tokens_are_reported_per_model_call_and_counted_into_the_callers_usage(bus: Bus) -> None:
    response = await bus.rt.request("crew", "run", {"text": "ask: probe: hi"}, budget=100)
    usage = response.payload.usage
    assert usage is not None and (usage.prompt, usage.completion) == (2 * PROMPT_TOKENS, 10)
    # The first model call was reported before the tool's call took the rest of the budget.
    assert bus.probed[0]["budget"] == 100 - PER_CALL
    outer = await bus.rt.request("outer", "run", {"text": "echo: x"})
    assert outer.payload.result == {"answer": "crew says x", "used": PER_CALL}
    # The same crew twice: each call counts its own tokens only.
    again = await bus.rt.request("crew", "run", {"text": "echo: again"})
    assert again.payload.usage is not None and again.payload.usage.total == PER_CALL


async def test_an_overspent_budget_stops_the_crew_before_its_next_step(bus: Bus) -> None:
    with pytest.raises(BudgetExceeded) as caught:
        await bus.rt.call("crew", "run", {"text": "ask: probe: hi"}, budget=PER_CALL - 3)
    assert bus.probed == []  # stopped after the first model call, before its tool call
    assert caught.value.usage is not None and caught.value.usage.total == PER_CALL
    assert await bus.rt.call("crew", "run", {"text": "echo: ok"}, budget=PER_CALL) == "crew says ok"


async def test_model_answers_and_tool_results_are_sent_as_progress(bus: Bus) -> None:
    seen: list[Any] = []
    answer = await bus.rt.call("crew", "run", {"text": "ask: probe: hi"}, on_progress=seen.append)
    assert [(u["framework"], u["step"], u["agent"]) for u in seen] == [
        ("crewai", "tool", "crew"),
        ("crewai", "model", "crew"),
    ]
    assert seen[0]["tool"] == "call_agent" and json.loads(seen[0]["text"]) == bus.probed[0]
    assert seen[1]["text"] == answer


async def test_a_cancel_reaches_the_tool_the_crew_waits_in(bus: Bus) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(bus.rt.call, "crew", "run", {"text": "wait"})
        await bus.wait_for("crew.waiting")
        assert not (bus.marks / "crew.cancelled").exists()
        tg.cancel_scope.cancel()
    assert await bus.wait_for("crew.cancelled") < 1.0
    # The instance serves the next call.
    assert await bus.rt.call("crew", "run", {"text": "echo: next"}) == "crew says next"


async def test_a_bus_call_in_flight_is_withdrawn_with_the_handler(bus: Bus) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(bus.rt.call, "crew", "run", {"text": "ask: sleeper: hi"})
        await bus.wait_for("sleeper.waiting")
        tg.cancel_scope.cancel()
    await bus.wait_for("sleeper.cancelled")


async def test_a_deadline_ends_the_crew_and_its_tool(bus: Bus) -> None:
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await bus.rt.call("crew", "run", {"text": "wait"}, timeout=1.0)
    assert anyio.current_time() - start < 3
    await bus.wait_for("crew.cancelled")


async def test_a_cycle_refused_to_a_tool_comes_out_typed(bus: Bus) -> None:
    with pytest.raises(CycleDetected):
        await bus.rt.call("crew", "run", {"text": "ask: crew: echo: again"})
    with pytest.raises(CycleDetected):  # outer -> crew -> outer
        await bus.rt.call("outer", "run", {"text": "ask: outer: echo: again"})


async def test_other_bus_errors_reach_the_model_as_a_failed_tool_result(bus: Bus) -> None:
    answer = await bus.rt.call("crew", "run", {"text": "ask: nobody-here: hi"})
    assert re.fullmatch(r"crew got: error: [A-Z_]+( from \S+)?: .+", answer), answer


async def test_human_input_ends_the_call_as_input_required(bus: Bus) -> None:
    await bus.rt.serve(from_crewai(lambda: crew("asking", human_input=True), name="asking"))
    with pytest.raises(InputRequired) as caught:
        await bus.rt.call("asking", "run", {"text": "echo: draft"})
    (interrupt,) = caught.value.details["interrupts"]
    assert interrupt["kind"] == "human_input" and interrupt["answer"] == "asking says draft"


async def test_a_failing_crew_is_an_agent_error(bus: Bus) -> None:
    def fail(output: TaskOutput) -> None:
        raise RuntimeError("the callback broke")

    def failing() -> Crew:
        made = crew("failing")
        made.tasks[0].callback = fail
        return made

    await bus.rt.serve(from_crewai(failing, name="failing"))
    with pytest.raises(AgentError) as caught:
        await bus.rt.call("failing", "run", {"text": "echo: x"})
    assert "RuntimeError: the callback broke" in caught.value.message


def test_bus_tools_get_their_schemas_as_fields_or_one_json_string() -> None:
    listed, free = crewai_tools([agent_tool(["probe", "crew"]), call_tool("probe", "run")])
    assert listed.name == "call_agent" and listed.description == agent_tool().description
    schema = listed.args_schema.model_json_schema()
    assert schema["required"] == ["agent", "text"]
    assert schema["properties"]["agent"]["enum"] == ["probe", "crew"]
    with pytest.raises(ValidationError):
        listed.args_schema(agent="someone else", text="hi")
    assert list(free.args_schema.model_fields) == ["arguments"]
    assert '"additionalProperties": true' in (free.args_schema.model_fields["arguments"].description or "")


async def test_the_delegate_tool_passes_seed_000s_arguments_as_the_model_sees_them(bus: Bus) -> None:
    answer = await bus.rt.call("crew", "run", {"text": "delegate: " + json.dumps(DELEGATION)})
    assert answer == "crew got: worker did: tidy the logs"
    assert bus.delegated == [DELEGATED]
    # CrewAI takes a nested schema as one JSON string, the whole schema in its description.
    (shown,) = [t for t in SHOWN["crew"] if t["function"]["name"] == "delegate"]
    parameters = shown["function"]["parameters"]
    assert list(parameters["properties"]) == ["arguments"]
    hint = parameters["properties"]["arguments"]["description"]
    assert json.loads(hint[hint.index("{") :]) == delegate_tool().input_schema


async def test_a_failed_delegation_or_bad_arguments_reach_the_model_as_error_text(bus: Bus) -> None:
    failed = await bus.rt.call(
        "crew", "run", {"text": "delegate: " + json.dumps({**DELEGATION, "task": "fail"})}
    )
    assert failed == "crew got: error: AGENT_ERROR from worker: the disk is full"
    refused = await bus.rt.call("crew", "run", {"text": "delegate: not json"})
    assert refused.startswith("crew got: error: INVALID_PARAMS: 'arguments' is not JSON"), refused
    assert len(bus.delegated) == 1


async def test_the_crews_own_tools_are_authorized_and_reported(bus: Bus) -> None:
    used = await bus.rt.call("boss", "run", {"target": "crew", "text": "use: lookup"})
    assert used == {"result": "crew got: looked up", "tool_calls": ["lookup"]}
    asked = await bus.rt.call("boss", "run", {"target": "crew", "text": "ask: probe: hi"})
    assert asked["tool_calls"] == []  # a bus tool is a bus call
    with pytest.raises(PermissionDenied, match="'lookup' is not among them"):
        await bus.rt.call("boss", "run", {"target": "crew", "text": "use: lookup", "allowed_tools": ["wait"]})
