"""How a call's outcome ends its task: deadlines, refusals, unknown actions (see gateway/mapping.py)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from . import agents
from .conftest import Gateway, action, message

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def failure(task: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(state, status text, status metadata) of a task that did not complete."""
    status = task["status"]
    text = status["message"]["parts"][0]["text"]
    return status["state"], text, status["message"].get("metadata", {})


async def test_a_deadline_fails_the_task_in_time(gateway: Gateway) -> None:
    agents.CANCELLED.clear()
    started = time.monotonic()
    with anyio.fail_after(5):
        task = await gateway.send(
            message(action("wait", seconds=30), metadata={"timeoutMs": 300}), agent="slow"
        )
    elapsed = time.monotonic() - started
    state, text, meta = failure(task)
    assert state == "TASK_STATE_FAILED"
    assert meta["code"] == "DEADLINE_EXCEEDED" and text.startswith("DEADLINE_EXCEEDED")
    assert 0.3 <= elapsed < 1.0, elapsed
    assert task["metadata"]["timeoutMs"] == 300
    with anyio.fail_after(3):
        while not agents.CANCELLED:  # the handler is stopped too, not left running
            await anyio.sleep(0.02)


async def test_a_deadline_in_the_request_metadata_reaches_the_delegated_call(gateway: Gateway) -> None:
    started = time.monotonic()
    with anyio.fail_after(5):
        task = await gateway.send(
            message(action("slowly", seconds=30)), agent="chain", metadata={"timeoutMs": 300}
        )
    state, _, meta = failure(task)
    assert state == "TASK_STATE_FAILED" and meta["code"] == "DEADLINE_EXCEEDED"
    assert time.monotonic() - started < 1.5


async def test_the_request_deadline_comes_before_the_message_one(gateway: Gateway) -> None:
    """mapping.timeout_of: the first timeoutMs of [request metadata, message metadata]."""
    with anyio.fail_after(5):
        task = await gateway.send(
            message(action("wait", seconds=30), metadata={"timeoutMs": 60_000}),
            agent="slow",
            metadata={"timeoutMs": 200},
        )
    assert task["metadata"]["timeoutMs"] == 200
    assert failure(task)[2]["code"] == "DEADLINE_EXCEEDED"


async def test_a_refusal_rejects_the_task(gateway: Gateway) -> None:
    task = await gateway.send(message(action("refuse")), agent="slow")
    state, text, meta = failure(task)
    assert state == "TASK_STATE_REJECTED"
    assert meta["code"] == "PERMISSION_DENIED"
    assert text == "PERMISSION_DENIED: not for you"
    assert "artifacts" not in task


@pytest.mark.parametrize(
    ("agent", "msg"),
    [
        pytest.param("echo", message(action("sing")), id="data-part"),
        pytest.param("echo", message(text="hi", metadata={"skillId": "sing"}), id="skill-id"),
        pytest.param(None, message({"data": {"agent": "echo", "action": "sing"}}), id="gateway-endpoint"),
    ],
)
async def test_an_unknown_action_rejects_the_task(
    gateway: Gateway, agent: str | None, msg: dict[str, Any]
) -> None:
    """mapping.py: UNKNOWN_ACTION is one of the errors that end a task as REJECTED."""
    task = await gateway.send(msg, agent=agent)
    state, text, meta = failure(task)
    assert state == "TASK_STATE_REJECTED"
    assert meta["code"] == "UNKNOWN_ACTION" and "sing" in text


async def ghost_task(gateway: Gateway) -> dict[str, Any]:
    """A task whose data part names an agent nobody serves, sent to the gateway's own endpoint."""
    with anyio.fail_after(5):
        task = await gateway.send(message({"data": {"agent": "ghost", "action": "x"}}))
    return task


async def test_a_data_part_naming_an_agent_that_is_not_live_fails_the_task(gateway: Gateway) -> None:
    state, text, meta = failure(await ghost_task(gateway))
    assert state == "TASK_STATE_FAILED"
    assert meta == {"code": "NO_RESPONDERS", "agent": "ghost", "hop": 1}
    assert text.startswith("NO_RESPONDERS")


async def test_a_failure_does_not_show_the_bus_subject(gateway: Gateway) -> None:
    _, text, _ = failure(await ghost_task(gateway))
    namespace = gateway.runtime.settings.namespace
    assert namespace not in text and "a2a." not in text, text


async def test_text_reaches_the_default_action(gateway: Gateway) -> None:
    with anyio.fail_after(5):
        task = await gateway.send(
            message(text="seconds are ignored"), agent="slow", metadata={"timeoutMs": 100}
        )
    assert task["metadata"]["action"] == "wait"
    assert failure(task)[2]["code"] == "DEADLINE_EXCEEDED"
    task = await gateway.send(message(text="relay this"), agent="front")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"data": {"relayed": "relay this"}}]
