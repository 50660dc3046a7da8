"""The AutoGen AgentChat adapter against real servers: result, progress, usage and budget,
cancellation and deadline reaching the run's tool through its CancellationToken, typed bus
errors out of AutoGen's tool loop, teams, and input requests.

The agents run the scripted fake model of ``tests/adapters/autogen_agents.py`` (10 + 5
tokens a model call).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from autogen_agentchat.agents import UserProxyAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken

from a2a import Agent, Context, Runtime, Settings
from a2a.adapters import agent_tool, call_tool, delegate_tool
from a2a.adapters.autogen import autogen_tools, from_autogen
from a2a.errors import BudgetExceeded, CycleDetected, DeadlineExceeded, InputRequired, PermissionDenied
from tests.adapters.autogen_agents import COMPLETION, PROMPT, SHOWN, make_assistant, make_team
from tests.adapters.plain_agents import DELEGATED, DELEGATION, boss_agent, worker_agent

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

PER_CALL = PROMPT + COMPLETION


@dataclass
class Bus:
    rt: Runtime
    marks: Path
    tokens: list[CancellationToken] = field(default_factory=list)
    """The CancellationToken each run of ``ag``'s wait tool was given."""
    slow_called: anyio.Event = field(default_factory=anyio.Event)
    slow_cancelled: anyio.Event = field(default_factory=anyio.Event)
    delegated: list[dict[str, Any]] = field(default_factory=list)

    async def wait_for(self, mark: str, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while not (self.marks / mark).exists():
                await anyio.sleep(0.02)


def slow_agent(bus: Bus) -> Agent:
    """A plain bus agent that answers never, and tells when it was called and cancelled."""
    slow = Agent("slow")

    @slow.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        bus.slow_called.set()
        try:
            await anyio.sleep_forever()
        finally:
            bus.slow_cancelled.set()
        return "never"

    return slow


def echo_agent() -> Agent:
    echo = Agent("echo")

    @echo.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        return f"echo says {params['text']}"

    return echo


async def never(prompt: str, token: CancellationToken | None) -> str:
    """A user's input function that waits until the run's token is cancelled."""
    waiting: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    if token is not None:
        token.link_future(waiting)
    return await waiting


def asking_team() -> RoundRobinGroupChat:
    return RoundRobinGroupChat([make_assistant("asker"), UserProxyAgent("human", input_func=never)])


@pytest.fixture
async def bus(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bus]:
    monkeypatch.setenv("A2A_TEST_MARKS", str(tmp_path))
    async with Runtime(settings) as rt:
        b = Bus(rt, tmp_path)
        await rt.serve(
            echo_agent(),
            slow_agent(b),
            from_autogen(lambda: make_assistant("ag", tokens=b.tokens), name="ag"),
            from_autogen(lambda: make_team("team"), name="team"),
            from_autogen(make_team("crew"), name="crew"),
            from_autogen(lambda: make_assistant("hand", handoff=True), name="hand"),
            from_autogen(asking_team, name="asker"),
            worker_agent(b.delegated),
            boss_agent(),
        )
        yield b


async def test_the_final_message_is_the_result_and_each_message_a_progress_update(bus: Bus) -> None:
    seen: list[Any] = []
    response = await bus.rt.request("ag", "run", {"text": "echo: hi"}, on_progress=seen.append)
    assert response.payload.result == "ag says hi"
    usage = {"prompt": PROMPT, "completion": COMPLETION}
    assert seen == [{"type": "TextMessage", "source": "ag", "text": "ag says hi", "usage": usage}]
    assert response.payload.usage is not None
    assert (response.payload.usage.prompt, response.payload.usage.completion) == (PROMPT, COMPLETION)


async def test_a_tool_calls_another_agent_and_its_answer_reaches_the_model(bus: Bus) -> None:
    seen: list[Any] = []
    response = await bus.rt.request("ag", "run", {"text": "ask: echo: hello"}, on_progress=seen.append)
    assert response.payload.result == "ag heard: echo says hello"
    assert [u["type"] for u in seen] == ["ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage"]
    assert "echo says hello" in seen[1]["text"]
    assert response.payload.usage is not None and response.payload.usage.total == 2 * PER_CALL


async def test_a_budget_is_enforced_as_the_usage_streams_in(bus: Bus) -> None:
    assert await bus.rt.call("ag", "run", {"text": "echo: x"}, budget=PER_CALL) == "ag says x"
    with pytest.raises(BudgetExceeded):
        await bus.rt.call("ag", "run", {"text": "echo: x"}, budget=PER_CALL - 1)
    with pytest.raises(BudgetExceeded):  # the first model call fits, the second does not
        await bus.rt.call("ag", "run", {"text": "ask: echo: x"}, budget=PER_CALL + 1)


async def test_a_withdrawn_call_cancels_the_token_and_the_tool_waiting_on_it(bus: Bus) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(bus.rt.call, "ag", "run", {"text": "wait"})
        await bus.wait_for("ag.waiting")
        assert not (bus.marks / "ag.cancelled").exists()
        tg.cancel_scope.cancel()  # the caller withdraws the call
    await bus.wait_for("ag.cancelled")
    assert [t.is_cancelled() for t in bus.tokens] == [True]


async def test_a_deadline_ends_the_call_and_the_run(bus: Bus) -> None:
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await bus.rt.call("ag", "run", {"text": "wait"}, timeout=1.0)
    assert anyio.current_time() - start < 3
    await bus.wait_for("ag.cancelled")
    assert bus.tokens[-1].is_cancelled()


async def test_a_cycle_from_inside_a_tool_comes_out_typed(bus: Bus) -> None:
    seen: list[Any] = []
    with pytest.raises(CycleDetected):
        await bus.rt.call("ag", "run", {"text": "ask: ag: echo: x"}, on_progress=seen.append)
    assert "TextMessage" not in [u["type"] for u in seen]  # the model was not asked again


async def test_other_bus_errors_go_to_the_model_as_text(bus: Bus) -> None:
    result = await bus.rt.call("ag", "run", {"text": "ask: nobody: hi"})
    assert re.fullmatch(r"ag heard: error: NO_RESPONDERS( from \S+)?: .+", result), result


async def test_the_model_is_shown_the_bus_tools_own_schema() -> None:
    tools = [agent_tool(["echo"]), call_tool("echo", "run")]
    ask, call = autogen_tools(tools)
    assert ask.schema["parameters"] == tools[0].input_schema
    assert (ask.name, ask.description) == (tools[0].name, tools[0].description)
    assert call.schema["parameters"] == {"type": "object", "additionalProperties": True, "properties": {}}


async def test_a_team_runs_and_its_stop_reason_is_the_last_update(bus: Bus) -> None:
    seen: list[Any] = []
    response = await bus.rt.request("team", "run", {"text": "echo: hi"}, on_progress=seen.append)
    assert response.payload.result == "team_b says hi"
    assert [(u["source"], u["text"]) for u in seen[:2]] == [
        ("team_a", "team_a says hi"),
        ("team_b", "team_b says hi"),
    ]
    assert seen[-1]["type"] == "stop" and "turns" in seen[-1]["reason"]
    assert response.payload.usage is not None and response.payload.usage.total == 2 * PER_CALL
    with pytest.raises(CycleDetected):  # out of a member's tool, though a team reports errors as text
        await bus.rt.call("team", "run", {"text": "ask: team: echo: x"})


async def test_a_cancel_withdraws_a_teams_bus_call_and_the_shared_team_serves_the_next(bus: Bus) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(bus.rt.call, "crew", "run", {"text": "ask: slow: x"})
        await bus.slow_called.wait()
        tg.cancel_scope.cancel()
    with anyio.fail_after(5):
        await bus.slow_cancelled.wait()  # the member's tool call was withdrawn
    assert await bus.rt.call("crew", "run", {"text": "echo: again"}, timeout=5) == "crew_b says again"
    with pytest.raises(ValueError, match="factory"):
        from_autogen(make_team("x"), name="x", max_concurrency=2)


async def test_a_handoff_to_the_user_asks_for_input_and_the_answer_resumes(bus: Bus) -> None:
    with pytest.raises(InputRequired) as caught:
        await bus.rt.call("hand", "run", {"text": "handoff: which colour?"})
    details = caught.value.details
    assert details["interrupts"][0]["agent"] == "hand"
    resume = details["resume"]
    assert resume["handoff"] == "hand"
    assert resume["history"][0] == {"source": "user", "text": "handoff: which colour?"}
    assert await bus.rt.call("hand", "run", {"text": "blue", **resume}) == "hand says blue"


async def test_a_user_proxy_asking_for_input_ends_the_call_with_input_required(bus: Bus) -> None:
    with anyio.fail_after(5), pytest.raises(InputRequired) as caught:
        await bus.rt.call("asker", "run", {"text": "echo: hi"})
    assert caught.value.details["interrupts"] == [
        {"kind": "input", "agent": "human", "text": "asker says hi"}
    ]
    history = caught.value.details["resume"]["history"]
    assert history[-1] == {"source": "asker", "text": "asker says hi"}


async def test_the_delegate_tool_passes_seed_000s_arguments_as_the_model_sees_them(bus: Bus) -> None:
    answer = await bus.rt.call("ag", "run", {"text": "delegate: " + json.dumps(DELEGATION)})
    assert answer == "ag heard: worker did: tidy the logs"
    assert bus.delegated == [DELEGATED]
    (shown,) = [t for t in SHOWN["ag"] if t["name"] == "delegate"]
    assert shown.get("parameters") == delegate_tool().input_schema


async def test_a_failed_delegation_or_bad_arguments_reach_the_model_as_error_text(bus: Bus) -> None:
    failed = await bus.rt.call(
        "ag", "run", {"text": "delegate: " + json.dumps({**DELEGATION, "task": "fail"})}
    )
    assert failed == "ag heard: error: AGENT_ERROR from worker: the disk is full"
    bad = {**DELEGATION, "roles": ["user"]}  # a filter field outside ``context``
    refused = await bus.rt.call("ag", "run", {"text": "delegate: " + json.dumps(bad)})
    assert refused.startswith("ag heard: error: INVALID_PARAMS: bad delegate arguments"), refused
    assert len(bus.delegated) == 1


async def test_the_assistants_own_tools_are_authorized_and_reported(bus: Bus) -> None:
    used = await bus.rt.call("boss", "run", {"target": "ag", "text": "use: lookup"})
    assert used == {"result": "ag heard: looked up", "tool_calls": ["lookup"]}
    asked = await bus.rt.call("boss", "run", {"target": "ag", "text": "ask: echo: hi"})
    assert asked["tool_calls"] == []  # a bus tool is a bus call
    with pytest.raises(PermissionDenied, match="'lookup' is not among them"):
        await bus.rt.call("boss", "run", {"target": "ag", "text": "use: lookup", "allowed_tools": ["wait"]})
