"""Gateway tasks as durable tasks (``A2A_TASKS=1``): one task per message id, and a task that
outlives the gateway replica that accepted it, on real nats-server (JetStream) and Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from a2a import Agent, Context, Settings
from a2a.dev.servers import free_port
from tests.helpers import ROOT, agent_env

from .conftest import V1, action, gateway_on, message, runtime_serving, sse_events, state_of

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

RAN: list[dict[str, Any]] = []

tally = Agent("tally", metadata={"defaultAction": "count"})


@tally.action("count")
async def count(ctx: Context, params: dict[str, Any]) -> Any:
    RAN.append(params)
    await ctx.progress("counting")
    await anyio.sleep(float(params.get("seconds", 0)))
    return {"counted": len(RAN), "attempt": ctx.task.number if ctx.task else 0}


def durable(settings: Settings) -> Settings:
    return msgspec.structs.replace(settings, tasks=True, task_ack_wait=1.5)


async def test_the_same_message_twice_is_one_task_that_ran_once(settings: Settings) -> None:
    RAN.clear()
    s = durable(settings)
    async with runtime_serving(s, tally) as runtime, gateway_on(runtime) as gw:
        first = await gw.send(message(text="one", messageId="m-1"), agent="tally")
        again = await gw.send(message(text="one", messageId="m-1"), agent="tally")
        other = await gw.send(message(text="two", messageId="m-2"), agent="tally")
    assert first["status"]["state"] == "TASK_STATE_COMPLETED", first
    assert again["id"] == first["id"] and again["status"]["state"] == "TASK_STATE_COMPLETED"
    assert other["id"] != first["id"]
    assert len(RAN) == 2  # m-1 once, m-2 once
    assert first["artifacts"] == again["artifacts"]


async def test_a_task_may_take_longer_than_a_call_may(settings: Settings) -> None:
    """``timeoutMs`` is capped by A2A_MAX_TASK_TTL, not by the calls' A2A_MAX_TTL."""
    s = msgspec.structs.replace(durable(settings), max_ttl=5.0)
    async with runtime_serving(s, tally) as runtime, gateway_on(runtime) as gw:
        task = await gw.send(
            message(text="long", messageId="m-long", metadata={"timeoutMs": 3_600_000}),
            agent="tally",
            configuration={"returnImmediately": True},
        )
        done = await gw.wait_state(task["id"], timeout=10)
    assert done["metadata"]["timeoutMs"] == 3_600_000
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done


@pytest.fixture
def replica_a(settings: Settings) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A gateway replica in a process of its own (``a2a gateway``), to be SIGKILLed."""
    port = free_port()
    env = agent_env(durable(settings), A2A_TASKS="1", A2A_TASK_ACK_WAIT="1.5")
    proc = subprocess.Popen(
        [sys.executable, "-m", "a2a", "gateway", "--port", str(port), "--replica-ttl", "2"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


async def test_the_replica_that_accepted_a_task_is_killed_and_another_reports_it_completed(
    settings: Settings, replica_a: tuple[str, subprocess.Popen[bytes]]
) -> None:
    RAN.clear()
    url, proc = replica_a
    s = durable(settings)
    async with (
        runtime_serving(s, tally) as runtime,
        gateway_on(runtime) as b,
        httpx.AsyncClient(base_url=url, timeout=10) as a,
    ):
        with anyio.fail_after(20):  # until replica A answers and sees the agent
            while True:
                try:
                    r = await a.post(
                        "/agents/tally/message:send",
                        json={
                            "message": message(action("count", seconds=2), messageId="m-kill"),
                            "configuration": {"returnImmediately": True},
                        },
                        headers=V1,
                    )
                    if r.status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await anyio.sleep(0.2)
        task_id = r.json()["task"]["id"]
        with anyio.fail_after(10):
            while not RAN:
                await anyio.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # mid-task: the agent still works on it
        done = await b.wait_state(task_id, timeout=40)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
    assert done["artifacts"][0]["parts"][0]["data"]["counted"] == 1
    assert len(RAN) == 1  # the work ran once


async def test_a_durable_task_streams_its_progress_result_and_end(settings: Settings) -> None:
    s = durable(settings)
    async with runtime_serving(s, tally) as runtime, gateway_on(runtime) as gw:
        body = {"message": message(action("count", seconds=0.2))}
        events: list[dict[str, Any]] = []
        with anyio.fail_after(15):
            async with gw.client.stream("POST", "/agents/tally/message:stream", json=body, headers=V1) as r:
                events += [event async for _, event in sse_events(r)]
    states = [state_of(event) for event in events]
    said = [
        part.get("text")
        for event in events
        for part in (event.get("statusUpdate", {}).get("status", {}).get("message") or {}).get("parts", [])
    ]
    assert "task" in events[0] and any("artifactUpdate" in event for event in events)
    assert "TASK_STATE_WORKING" in states and states[-1] == "TASK_STATE_COMPLETED"
    assert "counting" in said  # the handler's progress, from the task's journal
