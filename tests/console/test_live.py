"""Calls as they run, over HTTP and the event stream against real servers: a long call shows as
``running`` to its user alone and is replaced by its end; rows link to Jaeger when it is
configured; a console started later shows the calls made before it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from functools import partial
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.console import ConsoleAuth
from a2a.console import feed as feed_module
from a2a.console.feed import Feed
from a2a.console.links import Jaeger
from a2a.sessions import Sessions
from tests.console.conftest import Console
from tests.helpers import ROOT, AgentProcess, agent_env
from tests.sessions.conftest import remote_agents

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

JAEGER = "http://jaeger.example:16686"


@pytest.fixture
def auth() -> ConsoleAuth:
    return ConsoleAuth(tokens={"tok-alice": "alice", "tok-bob": "bob"})


@pytest.fixture
def jaeger() -> Jaeger:
    return Jaeger.checked(JAEGER + "/")


@pytest.fixture
async def client(console: Console) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=console.url, timeout=10) as c:
        yield c


def as_user(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer tok-{name}"}


def slow() -> Agent:
    agent = Agent("slow")

    @agent.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        await anyio.sleep(1.2)
        return "done"

    return agent


async def events(client: httpx.AsyncClient, user: str, got: list[dict[str, Any]]) -> None:
    """The calls of ``user``'s event stream, into ``got``, until cancelled."""
    async with client.stream("GET", "/api/events", headers=as_user(user)) as stream:
        kind = ""
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind == "call":
                got.append(json.loads(line[6:]))


async def test_a_long_call_shows_while_it_runs_to_its_user_and_then_as_it_ended(
    console: Console, client: httpx.AsyncClient
) -> None:
    await console.rt.serve(slow())
    alices: list[dict[str, Any]] = []
    bobs: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(events, client, "alice", alices)
        tg.start_soon(events, client, "bob", bobs)
        await anyio.sleep(0.3)  # the streams are open
        async with anyio.create_task_group() as calls:
            calls.start_soon(partial(console.rt.call, "slow", "run", {}, user_id="alice"))
            with anyio.fail_after(3):
                while not (
                    running := (await client.get("/api/state", headers=as_user("alice"))).json()["running"]
                ):
                    await anyio.sleep(0.05)
        [call] = running
        assert call["outcome"] == "running" and call["target"] == "slow" and call["userId"] == "alice"
        assert 500 <= call["durationMs"] < 1200 and call["startedAt"] > 0
        with anyio.fail_after(3):
            while len(alices) < 2:
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    assert [(c["requestId"], c["outcome"]) for c in alices] == [
        (call["requestId"], "running"),
        (call["requestId"], "ok"),
    ]
    assert bobs == []  # not bob's
    state = (await client.get("/api/state", headers=as_user("alice"))).json()
    assert state["running"] == [] and state["traces"] is True
    [ended] = [c for c in state["calls"] if c["requestId"] == call["requestId"]]
    assert ended["durationMs"] >= 1200
    assert (await client.get("/api/state", headers=as_user("bob"))).json()["calls"] == []

    link = urlsplit(ended["traceUrl"])
    assert f"{link.scheme}://{link.netloc}{link.path}" == JAEGER + "/search"
    query = {k: v for k, [v] in parse_qs(link.query).items()}
    assert query["service"] == "slow" and query["lookback"] == "custom"
    assert json.loads(query["tags"]) == {"a2a.correlation_id": call["requestId"]}
    assert int(query["start"]) < ended["startedAt"] * 1000 < int(query["end"])


async def test_a_console_started_later_shows_the_calls_made_before(settings: Settings) -> None:
    async with Runtime(settings) as rt, Sessions(rt) as sessions:
        await rt.serve(*remote_agents([]))
        for n in range(3):
            await rt.call("relay1", "run", {"text": str(n)}, user_id="ann")
        await anyio.sleep(0.3)  # the audit batches are published
        feed = Feed(rt, sessions.store)
        async with anyio.create_task_group() as tg:
            await tg.start(feed.run)
            got = list(feed.calls)
            tg.cancel_scope.cancel()
    assert len(got) == 9  # three calls of three hops each
    assert {r.target for r in got} == {"relay1", "relay2", "remote"}
    assert len({r.request_id for r in got}) == 9


async def test_a_call_whose_caller_and_callee_died_ends_as_lost_when_its_instance_leaves(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's AGENT_LOST record ends a call whose callee died; with the caller dead too
    nothing ever would, so the instance's absence from the registry does."""
    monkeypatch.setattr(feed_module, "REGISTRY_EVERY", 0.5)  # snapshots and patience to scale
    monkeypatch.setattr(feed_module, "LOST_AFTER", 1.0)
    async with Runtime(settings) as rt, Sessions(rt) as sessions, anyio.create_task_group() as tg:
        feed = Feed(rt, sessions.store)
        await tg.start(feed.run)
        with feed.listen() as events, AgentProcess(settings, "tests.agents:echo") as agent:
            await rt.wait_for_agents(["echo"])
            argv = [sys.executable, "-m", "a2a", "call", "echo", "sleep", "--params", '{"seconds": 60}']
            caller = await anyio.open_process(
                argv, env=agent_env(settings), cwd=ROOT, stdout=subprocess.DEVNULL
            )
            try:
                with anyio.fail_after(15):
                    running = await events.receive()
                    while running.kind != "call" or running.data.outcome != "running":
                        running = await events.receive()
            finally:
                caller.kill()  # SIGKILL: neither end of the call leaves a record
                await caller.wait()
            agent.kill()
            request_id = running.data.request_id
            assert [r.request_id for r in feed.still_running()] == [request_id]
            with anyio.fail_after(settings.heartbeat_interval * 3 + 6):
                ended = await events.receive()
                while ended.kind != "call" or ended.data.request_id != request_id:
                    ended = await events.receive()
        tg.cancel_scope.cancel()
    assert ended.data.outcome == "error" and ended.data.error_code == "AGENT_LOST"
    assert ended.data.instance == running.data.instance and ended.data.duration_ms >= 1000
    assert feed.still_running() == [] and feed.calls[-1] is ended.data
