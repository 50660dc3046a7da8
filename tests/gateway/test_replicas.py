"""Two gateway replicas behind one load balancer: two runtimes, one namespace, one Redis.

The agents run on a third runtime, so stopping replica A leaves them (and the bus) up.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import pytest

from a2a import Settings
from a2a.gateway.mapping import status
from a2a.gateway.tasks import StoredTask, TaskStore
from transports.a2a_http import Message, Part, Task

from . import agents
from .conftest import (
    AGENTS,
    TERMINAL,
    V1,
    Gateway,
    action,
    gateway_on,
    message,
    runtime_serving,
    sse_events,
    state_of,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

NAMES = [a.name for a in AGENTS]


@dataclass
class Replicas:
    a: Gateway
    b: Gateway
    stop_a: Callable[[], Awaitable[None]]
    settings: Settings


async def run_replica(
    settings: Settings, stop: anyio.Event, stopped: anyio.Event, *, task_status: anyio.abc.TaskStatus[Gateway]
) -> None:
    """A replica (runtime and gateway) in a task of its own, until ``stop`` is set."""
    try:
        async with runtime_serving(settings, wait_for=NAMES) as runtime, gateway_on(runtime) as gw:
            task_status.started(gw)
            await stop.wait()
    finally:
        stopped.set()


@pytest.fixture
async def replicas(settings: Settings) -> AsyncIterator[Replicas]:
    stop, stopped = anyio.Event(), anyio.Event()

    async def stop_a() -> None:
        stop.set()
        await stopped.wait()

    async with AsyncExitStack() as stack:
        await stack.enter_async_context(runtime_serving(settings, *AGENTS))
        runtime_b = await stack.enter_async_context(runtime_serving(settings, wait_for=NAMES))
        b = await stack.enter_async_context(gateway_on(runtime_b))
        async with anyio.create_task_group() as tg:
            a = await tg.start(run_replica, settings, stop, stopped)
            yield Replicas(a, b, stop_a, settings)
            stop.set()


async def start_slow(gw: Gateway, seconds: float) -> dict[str, Any]:
    """A call to the slow agent, running (WORKING) on ``gw`` when this returns."""
    task = await gw.send(
        message(action("wait", seconds=seconds)), agent="slow", configuration={"returnImmediately": True}
    )
    return dict(await gw.wait_state(task["id"], ["TASK_STATE_WORKING"]))


async def test_a_task_made_on_a_is_read_and_listed_on_b(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    assert (await a.client.get("/healthz")).json()["replica"] != (await b.client.get("/healthz")).json()[
        "replica"
    ]
    made = await a.send(message(text="from a", contextId="replicated"), agent="echo")
    read = await b.task(made["id"])
    assert read == made
    listed = await b.list_tasks(contextId="replicated", includeArtifacts="true")
    assert listed["tasks"] == [made]
    legacy = await b.rpc("tasks/get", {"id": made["id"]}, headers={})
    assert legacy["result"]["status"]["state"] == "completed"


async def test_cancel_on_b_stops_the_call_running_on_a(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    agents.CANCELLED.clear()
    task = await start_slow(a, 30)
    assert (await b.task(task["id"]))["status"]["state"] == "TASK_STATE_WORKING"
    started = time.monotonic()
    with anyio.fail_after(5):
        r = await b.client.post(f"/tasks/{task['id']}:cancel", headers=V1)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["state"] == "TASK_STATE_CANCELED"
    assert time.monotonic() - started < 3
    assert (await a.task(task["id"]))["status"]["state"] == "TASK_STATE_CANCELED"
    with anyio.fail_after(5):
        while not agents.CANCELLED:  # the slow handler itself was cancelled, not just the task
            await anyio.sleep(0.02)
    again = await b.client.post(f"/tasks/{task['id']}:cancel", headers=V1)
    assert again.status_code == 400


async def test_subscribe_on_b_streams_a_task_running_on_a(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    task = await start_slow(a, 0.4)
    kinds, states = [], []
    with anyio.fail_after(10):
        async with b.client.stream("POST", f"/tasks/{task['id']}:subscribe", headers=V1) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            async for event_type, event in sse_events(r):
                assert event_type == "message", event
                kinds.append(next(iter(event)))
                states.append(state_of(event))
    assert kinds[0] == "task" and states[0] == "TASK_STATE_WORKING"
    assert "artifactUpdate" in kinds
    assert kinds[-1] == "statusUpdate" and states[-1] == "TASK_STATE_COMPLETED"


async def test_jsonrpc_subscribe_on_b(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    task = await start_slow(a, 0.3)
    body = {"jsonrpc": "2.0", "id": "sub", "method": "SubscribeToTask", "params": {"id": task["id"]}}
    events = []
    with anyio.fail_after(10):
        async with b.client.stream("POST", "/agents/slow", json=body, headers=V1) as r:
            async for _, frame in sse_events(r):
                assert frame["id"] == "sub" and frame["jsonrpc"] == "2.0"
                events.append(frame["result"])
    assert state_of(events[-1]) == "TASK_STATE_COMPLETED"


async def test_stopping_a_ends_its_running_task_as_b_sees_it(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    agents.CANCELLED.clear()
    task = await start_slow(a, 30)
    states: list[str | None] = []
    with anyio.fail_after(10):
        async with b.client.stream("POST", f"/tasks/{task['id']}:subscribe", headers=V1) as r:
            events = sse_events(r)
            _, first = await anext(events)
            states.append(state_of(first))
            await replicas.stop_a()  # the whole replica: its gateway, then its runtime
            async for _, event in events:
                states.append(state_of(event))
    final = await b.task(task["id"])
    assert final["status"]["state"] in ("TASK_STATE_FAILED", "TASK_STATE_CANCELED"), final
    assert states[-1] == final["status"]["state"]
    (listed,) = (await b.list_tasks())["tasks"]
    assert listed["status"]["state"] == final["status"]["state"]
    with anyio.fail_after(5):
        while not agents.CANCELLED:  # nobody waits for the call any more: it was withdrawn
            await anyio.sleep(0.02)
    await b.healthy()


async def test_stopping_a_lets_a_call_within_the_grace_period_finish(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    task = await start_slow(a, 0.5)
    with anyio.fail_after(10):
        await replicas.stop_a()
    final = await b.task(task["id"])
    assert final["status"]["state"] == "TASK_STATE_COMPLETED", final["status"]


async def test_a_task_whose_replica_vanished_is_failed_by_the_next_reader(replicas: Replicas) -> None:
    """A replica killed outright writes no final state; its heartbeat key simply expires."""
    b = replicas.b
    assert b.runtime.registry is not None
    store = TaskStore(b.runtime.registry.redis, replicas.settings.namespace)
    orphan = Task(
        id="orphan-1",
        context_id="ctx-orphan",
        status=status("TASK_STATE_WORKING"),
        history=[Message(message_id="m", role="ROLE_USER", parts=[Part(text="hi")], task_id="orphan-1")],
    )
    await store.save(StoredTask(task=orphan, owner="anonymous", replica="gone-replica", agent="slow"))
    read = await b.task("orphan-1")
    assert read["status"]["state"] == "TASK_STATE_FAILED"
    assert "stopped" in read["status"]["message"]["parts"][0]["text"]
    r = await b.client.post("/tasks/orphan-1:cancel", headers=V1)
    assert r.status_code == 400 and r.json()["error"]["details"][0]["reason"] == "TASK_NOT_CANCELABLE"
    (listed,) = (await b.list_tasks())["tasks"]
    assert listed["status"]["state"] in TERMINAL
