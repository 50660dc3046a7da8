"""Streams: hop progress from deeper calls, clients that go away, subscribers on the same replica."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from .conftest import V1, Gateway, action, message, rpc_body, sse_events, state_of

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def collect(gw: Gateway, path: str, body: dict[str, Any] | None = None) -> list[Any]:
    """The data of every event of an SSE response, to its end (none of them an error event)."""
    events = []
    with anyio.fail_after(10):
        async with gw.client.stream("POST", path, json=body, headers=V1) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            async for event_type, data in sse_events(r):
                assert event_type == "message", data
                events.append(data)
    return events


def hops(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``hop`` metadata of the working updates that report a hop below the task's call."""
    found = []
    for event in events:
        status = event.get("statusUpdate", {}).get("status", {})
        meta = (status.get("message") or {}).get("metadata") or {}
        if status.get("state") == "TASK_STATE_WORKING" and "hop" in meta:
            found.append(meta["hop"])
    return found


async def test_a_chain_reports_its_hops_before_it_ends(gateway: Gateway) -> None:
    body = rpc_body("SendStreamingMessage", {"message": message(action("slowly", seconds=0.3))}, "s1")
    frames = await collect(gateway, "/agents/chain", body)
    assert all(frame["id"] == "s1" for frame in frames)
    events = [frame["result"] for frame in frames]
    states = [state_of(e) for e in events]
    assert states[0] == "TASK_STATE_SUBMITTED" and states[-1] == "TASK_STATE_COMPLETED"
    reported = hops(events)
    assert reported, events
    slow_hop = next(h for h in reported if h["target"] == "slow")
    assert slow_hop["origin"] == "chain" and slow_hop["action"] == "wait" and slow_hop["outcome"] == "ok"
    assert slow_hop["depth"] == 1 and slow_hop["durationMs"] >= 300
    first_hop = next(i for i, e in enumerate(events) if hops([e]))
    assert first_hop < len(events) - 1
    # Progress is for the stream only: the stored task shows the outcome.
    task_id = events[0]["task"]["id"]
    task = await gateway.task(task_id)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["data"] == {"waited": "waited", "said": "after the wait"}


async def test_rest_streams_carry_hops_too(gateway: Gateway) -> None:
    body = {"message": message(action("slowly", seconds=0.3))}
    events = await collect(gateway, "/agents/chain/message:stream", body)
    assert hops(events)
    assert [next(iter(e)) for e in events][-2:] == ["artifactUpdate", "statusUpdate"]


async def test_a_handlers_progress_streams_as_working_updates_before_the_result(gateway: Gateway) -> None:
    body = rpc_body("SendStreamingMessage", {"message": message(action("steps", n=3))}, "p1")
    events = [frame["result"] for frame in await collect(gateway, "/agents/front", body)]
    updates = [
        e["statusUpdate"]["status"]["message"]
        for e in events
        if "statusUpdate" in e
        and ((e["statusUpdate"]["status"].get("message") or {}).get("metadata") or {}).get("progress")
    ]
    assert [m["parts"][0] for m in updates] == [
        {"text": "starting"},
        {"data": {"step": 0}},
        {"data": {"step": 1}},
        {"data": {"step": 2}},
    ]
    assert all(
        e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
        for e in events
        if "statusUpdate" in e and e["statusUpdate"]["status"].get("message") in updates
    )
    assert state_of(events[-1]) == "TASK_STATE_COMPLETED"
    task = await gateway.task(events[0]["task"]["id"])
    assert task["artifacts"][0]["parts"][0]["text"] == "stepped"


async def test_a_client_that_disconnects_mid_stream_leaves_the_task_running(gateway: Gateway) -> None:
    with anyio.fail_after(5):
        async with gateway.client.stream(
            "POST",
            "/agents/chain/message:stream",
            json={"message": message(action("slowly", seconds=0.3))},
            headers=V1,
        ) as r:
            _, first = await anext(sse_events(r))
    task_id = first["task"]["id"]
    assert (await gateway.task(task_id))["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    done = await gateway.wait_state(task_id, timeout=5)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["data"]["waited"] == "waited"
    with anyio.fail_after(2):
        while (await gateway.client.get("/healthz")).json()["running"]:
            await anyio.sleep(0.02)
    await gateway.healthy()


async def test_several_subscribers_on_the_same_replica_all_see_the_end(gateway: Gateway) -> None:
    task = await gateway.send(
        message(action("slowly", seconds=0.3)), agent="chain", configuration={"returnImmediately": True}
    )
    results: list[list[Any]] = []

    async def subscribe(path: str, body: dict[str, Any] | None) -> None:
        results.append(await collect(gateway, path, body))

    async with anyio.create_task_group() as tg:
        tg.start_soon(subscribe, f"/tasks/{task['id']}:subscribe", None)
        tg.start_soon(subscribe, f"/agents/chain/tasks/{task['id']}:subscribe", None)
        tg.start_soon(subscribe, "/", rpc_body("SubscribeToTask", {"id": task["id"]}))
    assert len(results) == 3
    for events in results:
        last = events[-1].get("result", events[-1])
        assert state_of(last) == "TASK_STATE_COMPLETED", events


async def test_a_refusal_ends_the_stream_rejected(gateway: Gateway) -> None:
    events = await collect(gateway, "/agents/slow/message:stream", {"message": message(action("refuse"))})
    assert state_of(events[-1]) == "TASK_STATE_REJECTED"
    assert "artifactUpdate" not in {next(iter(e)) for e in events}


async def test_a_stream_that_cannot_start_is_a_plain_error(gateway: Gateway) -> None:
    r = await gateway.client.post(
        "/agents/echo/message:stream", json={"message": message() | {"parts": []}}, headers=V1
    )
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json")
    body = await gateway.rpc(
        "SendStreamingMessage", {"message": message(contextId="bad context")}, agent="echo"
    )
    assert body["error"]["code"] == -32602


async def test_a_legacy_stream_marks_the_final_event(gateway: Gateway) -> None:
    legacy = {
        "kind": "message",
        "messageId": "l1",
        "role": "user",
        "parts": [{"kind": "text", "text": "old"}],
    }
    events = []
    with anyio.fail_after(10):
        async with gateway.client.stream(
            "POST", "/agents/echo", json=rpc_body("message/stream", {"message": legacy})
        ) as r:
            async for _, frame in sse_events(r):
                events.append(frame["result"])
    assert events[0]["kind"] == "task"
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is True
    assert events[-1]["status"]["state"] == "completed"


async def test_hops_of_another_task_in_the_same_context_stay_out_of_a_stream(gateway: Gateway) -> None:
    events: list[Any] = []

    async def follow_the_waiting_task() -> None:
        body = {"message": message(action("wait", seconds=1.0), contextId="shared")}
        events.extend(await collect(gateway, "/agents/slow/message:stream", body))

    async with anyio.create_task_group() as tg:
        tg.start_soon(follow_the_waiting_task)
        await anyio.sleep(0.1)
        other = await gateway.send(message(action("slowly", seconds=0.2), contextId="shared"), agent="chain")
        assert other["status"]["state"] == "TASK_STATE_COMPLETED"
    assert state_of(events[-1]) == "TASK_STATE_COMPLETED"
    assert hops(events) == []  # slow.wait delegates nothing
