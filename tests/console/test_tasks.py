"""The console's durable tasks API against real servers (JetStream): listing, reading with the
journal, submitting and cancelling as the logged-in user; another user's task is 404, a bad
id or body a typed 400, and a console whose runtime has tasks off says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from a2a import Agent, Context, Settings
from a2a.console import ConsoleAuth
from tests.console.conftest import Console

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ALICE = {"Authorization": "Bearer tok-alice"}
BOB = {"Authorization": "Bearer tok-bob"}


def worker() -> tuple[Agent, Agent]:
    """``worker.slow``: a child task to ``helper``, four progress updates half a second apart,
    then its result; ``worker.nap``: a minute of sleep (for cancelling); ``helper.quick``."""
    agent, helper = Agent("worker", max_concurrency=4), Agent("helper")

    @agent.action("slow")
    async def slow(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        child = await ctx.submit("helper", "quick", {})
        for step in (1, 2, 3, 4):
            await ctx.progress({"step": step, "of": 4})
            await anyio.sleep(0.5)
        return {"done": params.get("what", ""), "child": await child.result()}

    @agent.action("nap")
    async def nap(ctx: Context, params: dict[str, Any]) -> str:
        await anyio.sleep(60)
        return "woke"

    @helper.action("quick")
    async def quick(ctx: Context, params: dict[str, Any]) -> str:
        return "quick"

    return agent, helper


@pytest.fixture
def tasks_on() -> bool:
    return True


@pytest.fixture
def settings(settings: Settings, tasks_on: bool) -> Settings:
    return msgspec.structs.replace(settings, tasks=tasks_on)


@pytest.fixture
def auth() -> ConsoleAuth:
    return ConsoleAuth(tokens={"tok-alice": "alice", "tok-bob": "bob"})


@pytest.fixture
async def client(console: Console) -> AsyncIterator[httpx.AsyncClient]:
    await console.rt.serve(*worker())
    async with httpx.AsyncClient(base_url=console.url, timeout=10) as c:
        yield c


async def until(client: httpx.AsyncClient, task_id: str, ready: Any, within: float = 10) -> dict[str, Any]:
    with anyio.fail_after(within):
        while True:
            r = await client.get(f"/api/tasks/{task_id}", headers=ALICE)
            assert r.status_code == 200, r.text
            if ready(task := r.json()):
                return task
            await anyio.sleep(0.05)


async def test_submit_list_read_and_cancel(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/api/tasks", json={"agent": "worker", "action": "slow", "params": {"what": "x"}}, headers=ALICE
    )
    assert r.status_code == 201, r.text
    slow = r.json()
    assert slow["created"] and slow["agent"] == "worker" and slow["action"] == "slow"
    assert slow["state"] in ("queued", "running") and not slow["ended"] and slow["error"] is None

    running = await until(client, slow["id"], lambda t: t["state"] == "running")
    assert running["attempts"] == 1 and running["startedAt"] >= running["submittedAt"]
    assert running["events"][0]["kind"] == "attempt" and running["events"][0]["instance"].startswith("worker")

    nap = (
        await client.post(
            "/api/tasks",
            json={"agent": "worker", "action": "nap", "key": "nap-1", "timeout": 120},
            headers=ALICE,
        )
    ).json()
    again = await client.post(
        "/api/tasks", json={"agent": "worker", "action": "nap", "key": "nap-1"}, headers=ALICE
    )
    assert again.status_code == 200 and again.json()["id"] == nap["id"] and not again.json()["created"]
    assert nap["deadline"] - nap["submittedAt"] == 120_000
    await until(client, nap["id"], lambda t: t["state"] == "running")

    listed = (await client.get("/api/tasks", headers=ALICE)).json()
    assert listed["enabled"] and not listed["more"]
    ids = [t["id"] for t in listed["tasks"]]
    assert ids.index(nap["id"]) < ids.index(slow["id"])  # newest first
    assert len(ids) == 3  # the child task of slow too: submitted for alice by this runtime

    cancelled = await client.post(f"/api/tasks/{nap['id']}/cancel", json={}, headers=ALICE)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "cancelled" and cancelled.json()["error"]["code"] == "CANCELLED"
    assert cancelled.json()["attempts"] == 1 and cancelled.json()["events"][-1]["kind"] == "ended"
    twice = await client.post(f"/api/tasks/{nap['id']}/cancel", json={}, headers=ALICE)
    assert twice.status_code == 200 and twice.json()["state"] == "cancelled"

    done = await until(client, slow["id"], lambda t: t["ended"])
    assert done["state"] == "completed" and done["error"] is None
    assert msgspec.json.decode(done["result"]) == {"done": "x", "child": "quick"}
    kinds = [e["kind"] for e in done["events"]]
    assert kinds == ["attempt", "child", "progress", "progress", "progress", "progress", "ended"], kinds
    child = done["events"][1]["child"]
    assert child["agent"] == "helper" and done["events"][2]["text"] == '{"step":1,"of":4}'
    assert [e["n"] for e in done["events"]] == list(range(1, 8))
    assert done["endedAt"] >= done["startedAt"]
    quick = (await client.get(f"/api/tasks/{child['taskId']}", headers=ALICE)).json()
    assert quick["state"] == "completed" and quick["result"] == "quick"


async def test_another_users_task_is_not_found(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/tasks", json={"agent": "worker", "action": "nap"}, headers=ALICE)
    task_id = r.json()["id"]
    missing = await client.get("/api/tasks/no_such_task", headers=BOB)
    for response in (
        await client.get(f"/api/tasks/{task_id}", headers=BOB),
        await client.post(f"/api/tasks/{task_id}/cancel", json={}, headers=BOB),
        missing,
    ):
        assert response.status_code == 404, response.text
        assert response.json() == missing.json()  # the same answer: ids are not probed
    assert (await client.get("/api/tasks", headers=BOB)).json()["tasks"] == []
    assert (await client.get(f"/api/tasks/{task_id}", headers=ALICE)).json()["state"] != "cancelled"
    assert (await client.get("/api/tasks")).status_code == 401
    assert (await client.post(f"/api/tasks/{task_id}/cancel", json={})).status_code == 401
    await client.post(f"/api/tasks/{task_id}/cancel", json={}, headers=ALICE)


async def test_bad_ids_and_bodies_get_typed_errors(client: httpx.AsyncClient) -> None:
    for bad in ("bad.id", "x" * 65, "a%20b", "%C3%A9t%C3%A9"):
        for r in (
            await client.get(f"/api/tasks/{bad}", headers=ALICE),
            await client.post(f"/api/tasks/{bad}/cancel", json={}, headers=ALICE),
        ):
            assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_PARAMS", (bad, r.text)
            assert "task id" in r.json()["error"]["message"]
    good = {"agent": "worker", "action": "quick"}
    for body, word in [
        ({"action": "quick"}, "agent"),
        ({**good, "agent": "bad name!"}, "agent name"),
        ({**good, "agent": 7}, "agent"),
        ({"agent": "worker"}, "action"),
        ({**good, "action": "\n"}, "action"),
        ({**good, "action": "x" * 257}, "action"),
        ({**good, "params": [1, 2]}, "params must be a JSON object"),
        ({**good, "params": "{}"}, "params must be a JSON object"),
        ({**good, "key": ""}, "key"),
        ({**good, "key": "k" * 257}, "key"),
        ({**good, "timeout": 0}, "timeout"),
        ({**good, "timeout": -5}, "timeout"),
        ({**good, "timeout": "60"}, "timeout"),
        ({**good, "timeout": True}, "timeout"),
        ({**good, "timeout": 10**12}, "timeout"),
        ({**good, "maxAttempts": 0}, "maxAttempts"),
        ({**good, "maxAttempts": 2.5}, "maxAttempts"),
        ({**good, "parameters": {}}, "unknown field 'parameters'"),
    ]:
        r = await client.post("/api/tasks", json=body, headers=ALICE)
        assert r.status_code == 400 and word in r.json()["error"]["message"], (body, r.text)
        assert r.json()["error"]["code"] == "INVALID_PARAMS"
    for content in (b"[1]", b"not json", b'{"agent": "' + b"a" * 70_000 + b'"}', b"[" * 100_000):
        r = await client.post(
            "/api/tasks", content=content, headers={**ALICE, "Content-Type": "application/json"}
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_PARAMS", content[:20]
    form = await client.post("/api/tasks", data=good, headers=ALICE)
    assert form.status_code == 400 and "JSON" in form.json()["error"]["message"]
    cross = await client.post("/api/tasks", json=good, headers={**ALICE, "Origin": "http://evil.example"})
    assert cross.status_code == 403
    assert (await client.get("/api/tasks", headers=ALICE)).json()["tasks"] == []  # nothing was submitted


@pytest.mark.parametrize("tasks_on", [False])
async def test_with_tasks_off_the_list_says_so(client: httpx.AsyncClient) -> None:
    listed = await client.get("/api/tasks", headers=ALICE)
    assert listed.status_code == 200
    assert listed.json()["enabled"] is False and "off" in listed.json()["message"]
    for r in (
        await client.post("/api/tasks", json={"agent": "worker", "action": "quick"}, headers=ALICE),
        await client.get("/api/tasks/abc", headers=ALICE),
        await client.post("/api/tasks/abc/cancel", json={}, headers=ALICE),
    ):
        assert r.status_code == 503 and r.json()["error"]["code"] == "UNAVAILABLE", r.text
