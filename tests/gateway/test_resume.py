"""Resumable streams: every logged event of a task carries its number as the SSE ``id``; a
client whose stream broke off resubscribes, on any replica, with ``Last-Event-ID`` and gets
exactly the events after it (real nats-server and Redis, two gateway replicas)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from a2a import Agent, Context, Settings
from a2a.gateway.tasks import TaskStore

from .conftest import V1, action, gateway_on, message, runtime_serving

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ticker = Agent("ticker")


@ticker.action("tick")
async def tick(ctx: Context, params: dict[str, Any]) -> Any:
    for i in range(int(params["times"])):
        await ctx.progress(f"tick {i}")
        await anyio.sleep(0.1)
    return "done"


async def numbered(response: httpx.Response) -> AsyncIterator[tuple[int | None, dict[str, Any]]]:
    """(``id`` or None, data) of each event of an SSE response."""
    ident: int | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield ident, json.loads("\n".join(data))
            ident, data = None, []
        elif line.startswith("id:"):
            ident = int(line[3:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].strip())


async def test_a_stream_cut_midway_resumes_on_another_replica_with_exactly_the_rest(
    settings: Settings,
) -> None:
    async with (
        runtime_serving(settings, ticker) as here,
        runtime_serving(settings, wait_for=["ticker"]) as there,
        gateway_on(here) as a,
        gateway_on(there) as b,
    ):
        body = {"message": message(action("tick", times=8))}
        first: list[tuple[int, dict[str, Any]]] = []
        task_id = ""
        with anyio.fail_after(10):
            async with a.client.stream("POST", "/agents/ticker/message:stream", json=body, headers=V1) as r:
                async for ident, event in numbered(r):
                    if "task" in event:
                        task_id = event["task"]["id"]
                    if ident is not None:
                        first.append((ident, event))
                    if len(first) == 3:
                        break  # the connection drops here
        last = first[-1][0]
        rest: list[tuple[int, dict[str, Any]]] = []
        unnumbered: list[dict[str, Any]] = []
        with anyio.fail_after(15):
            headers = {**V1, "Last-Event-ID": str(last)}
            async with b.client.stream("POST", f"/tasks/{task_id}:subscribe", headers=headers) as r:
                assert r.status_code == 200, await r.aread()
                async for ident, event in numbered(r):
                    if ident is None:
                        unnumbered.append(event)
                    else:
                        rest.append((ident, event))
        assert there.registry is not None
        logged = await TaskStore(there.registry.redis, settings.namespace).events_after(task_id, 0)
    assert [n for n, _ in first] == [1, 2, 3]
    assert [n for n, _ in rest] == [n.seq for n in logged if n.seq > last]  # no gap, no duplicate
    assert rest[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert sum("artifactUpdate" in event for _, event in rest) == 1
    said = [
        e["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        for _, e in [*first, *rest]
        if "statusUpdate" in e
        and e["statusUpdate"]["status"].get("message")
        and e["statusUpdate"]["status"]["message"]["parts"][0].get("text", "").startswith("tick")
    ]
    assert said == [f"tick {i}" for i in range(8)]  # every progress update once, in order
    assert "task" in unnumbered[0]  # a resumed stream begins with the task as it is


async def test_a_malformed_last_event_id_is_refused(settings: Settings) -> None:
    async with runtime_serving(settings, ticker) as runtime, gateway_on(runtime) as gw:
        task = await gw.send(message(action("tick", times=1)), agent="ticker")
        r = await gw.client.post(f"/tasks/{task['id']}:subscribe", headers={**V1, "Last-Event-ID": "abc"})
    assert r.status_code == 400, r.text
