"""Multi-turn tasks through the gateway: an agent that needs input parks the task in
``TASK_STATE_INPUT_REQUIRED`` with nothing running; a follow-up message naming the task
continues it, on another replica, after the agent's process was replaced (real
nats-server, JetStream and Redis; a real LangGraph graph with ``interrupt()``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from a2a import Agent, Context, Settings
from a2a.errors import InputRequired
from tests.adapters.test_langgraph import asker
from tests.helpers import AgentProcess

from .conftest import gateway_on, message, runtime_serving

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ASKED: list[dict[str, Any]] = []

clerk = Agent("clerk", metadata={"defaultAction": "greet"})


@clerk.action("greet")
async def greet(ctx: Context, params: dict[str, Any]) -> Any:
    ASKED.append(params)
    if "resume" not in params:
        raise InputRequired("what is your name?", details={"resume": {"step": 2}})
    return f"hello {params['resume']} (step {params['step']})"


def text_of(status: dict[str, Any]) -> str:
    return str(status["message"]["parts"][0]["text"])


async def test_a_question_parks_the_task_and_a_follow_up_on_another_replica_completes_it(
    settings: Settings,
) -> None:
    ASKED.clear()
    async with (
        runtime_serving(settings, clerk) as here,
        runtime_serving(settings, wait_for=["clerk"]) as there,
        gateway_on(here) as a,
        gateway_on(there) as b,
    ):
        asked = await a.send(message(text="hi"), agent="clerk")
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
        assert "what is your name?" in text_of(asked["status"])
        answered = await b.send(
            message(text="Ann", taskId=asked["id"], contextId=asked["contextId"]), agent="clerk"
        )
        again = await b.client.post(
            "/agents/clerk/message:send",
            json={"message": message(text="Bob", taskId=asked["id"])},
            headers={"A2A-Version": "1.0"},
        )
    assert answered["id"] == asked["id"] and answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answered["artifacts"][-1]["parts"][0]["text"] == "hello Ann (step 2)"
    assert [m["role"] for m in answered["history"]] == ["ROLE_USER", "ROLE_USER"]
    assert ASKED == [{"text": "hi"}, {"step": 2, "resume": "Ann"}]
    assert again.status_code == 400  # a completed task takes no further messages


async def test_a_durable_task_waits_for_input_while_its_agent_process_is_replaced(settings: Settings) -> None:
    s = msgspec.structs.replace(settings, tasks=True, task_ack_wait=1.5)
    target = "tests.gateway.test_turns:clerk"
    async with runtime_serving(s) as runtime, gateway_on(runtime) as gw:
        with AgentProcess(s, target, A2A_TASKS="1", A2A_TASK_ACK_WAIT="1.5") as first:
            await runtime.wait_for_agents(["clerk"], timeout=20)
            asked = await gw.send(message(text="hi"), agent="clerk")
            first.kill()
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
        with AgentProcess(s, target, A2A_TASKS="1", A2A_TASK_ACK_WAIT="1.5"):
            await runtime.wait_for_agents(["clerk"], timeout=20)
            answered = await gw.send(message(text="Cy", taskId=asked["id"]), agent="clerk")
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    assert answered["artifacts"][-1]["parts"][0]["text"] == "hello Cy (step 2)"


async def test_a_langgraph_interrupt_is_a_question_and_the_follow_up_its_answer(settings: Settings) -> None:
    async with (
        runtime_serving(settings, asker("graph", checkpointer=InMemorySaver())) as runtime,
        gateway_on(runtime) as gw,
    ):
        asked = await gw.send(message(text="go"), agent="graph")
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
        assert "really go?" in text_of(asked["status"])
        answered = await gw.send(message(text="yes", taskId=asked["id"]), agent="graph")
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    assert answered["artifacts"][-1]["parts"][0]["data"] == {"text": "go", "answer": "yes"}


async def test_a_langgraph_question_is_answered_after_its_agent_process_is_replaced(
    settings: Settings, tmp_path: Path
) -> None:
    s = msgspec.structs.replace(settings, tasks=True, task_ack_wait=1.5)
    runs = tmp_path / "runs"
    env = {"A2A_TASKS": "1", "A2A_TASK_ACK_WAIT": "1.5", "TURN_COUNT_FILE": str(runs)}
    target = "tests.gateway.turn_agents:planner"
    async with runtime_serving(s) as runtime, gateway_on(runtime) as gw:
        with AgentProcess(s, target, **env) as first:
            await runtime.wait_for_agents(["planner"], timeout=20)
            asked = await gw.send(message(text="launch"), agent="planner")
            first.kill()
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
        assert "go ahead with the plan for launch?" in text_of(asked["status"])
        with AgentProcess(s, target, **env):
            await runtime.wait_for_agents(["planner"], timeout=20)
            answered = await gw.send(message(text="yes", taskId=asked["id"]), agent="planner")
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    result = answered["artifacts"][-1]["parts"][0]["data"]
    assert result == {"text": "launch", "plan": "plan for launch", "answer": "yes"}
    assert runs.read_text().splitlines() == ["prepare", "answered"]  # planned once, resumed there


@pytest.mark.parametrize("durable", [False, True])
async def test_a_task_waiting_for_input_is_cancelled_and_takes_no_answer(
    settings: Settings, durable: bool
) -> None:
    s = msgspec.structs.replace(settings, tasks=durable)
    async with runtime_serving(s, clerk) as runtime, gateway_on(runtime) as gw:
        asked = await gw.send(message(text="hi"), agent="clerk")
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
        cancelled = await gw.rpc("CancelTask", {"id": asked["id"]}, agent="clerk")
        assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED", cancelled
        again = await gw.rpc("CancelTask", {"id": asked["id"]}, agent="clerk")
        late = await gw.client.post(
            "/agents/clerk/message:send",
            json={"message": message(text="Ann", taskId=asked["id"])},
            headers={"A2A-Version": "1.0"},
        )
        stored = await gw.task(asked["id"])
    assert again["error"]["code"] == -32002  # TaskNotCancelable: it has ended
    assert late.status_code == 400
    assert stored["status"]["state"] == "TASK_STATE_CANCELED"
