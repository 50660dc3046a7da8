"""Redis data that belongs to users is readable only by the users that serve them.

Under the ACL ``a2a redis-config`` generates, an agent (``reader``) or a plain client
(``client``) gets NOPERM on gateway tasks, task lists and sessions; the gateway keeps its
tasks, and sessions and the console run, each as its own generated user, with no admin;
nobody but the admin writes the roster's grants, and an agent counts only its own
instances.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import httpx
import pytest
import redis.asyncio as aioredis
from redis.exceptions import NoPermissionError

from a2a import Agent, Runtime, Settings
from a2a.cli.main import build_parser, run_command
from a2a.console import ConsoleAuth, serve_console
from a2a.gateway import GatewayConfig
from a2a.gateway.tasks import StoredTask, TaskStore
from a2a.sessions import Limits, Sessions, SharedCallPolicy
from a2a.sessions.model import Session
from a2a.sessions.store import SessionStore
from a2a.stores.history import HistoryStore
from discovery.registry import RegistryKeys
from tests.gateway.agents import echo, slow
from tests.gateway.conftest import action, gateway_on, message
from tests.gateway.webhook import Receiver, receiver
from tests.security.redis_acl import AclServer, running_acl, session_agents
from transports.a2a_http import Task, TaskStatus

pytestmark = [pytest.mark.anyio, pytest.mark.integration]
__all__ = ["receiver"]  # the fixture

NAMESPACE = "families"
AGENTS = ("echo", "slow", "drafter", "remote", "reader", "writer")
KEYS = RegistryKeys(NAMESPACE)
P = KEYS.prefix
POLICY = SharedCallPolicy(allow_shared_agent_calls=True, allowed_shared_device_ids=["remote"])


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclServer]:
    with running_acl(tmp_path_factory.mktemp("families"), AGENTS, NAMESPACE) as acl:
        yield acl


@asynccontextmanager
async def connected(acl: AclServer, user: str) -> AsyncIterator[aioredis.Redis]:
    conn = aioredis.Redis.from_url(acl.url(user))
    try:
        yield conn
    finally:
        await conn.aclose()


def as_user(acl: AclServer, nats_url: str, user: str) -> Settings:
    """A runtime on the open NATS server whose Redis user is ``user``."""
    return Settings(nats_url=nats_url, redis_url=acl.url(user), namespace=NAMESPACE, heartbeat_interval=0.3)


@asynccontextmanager
async def serving(acl: AclServer, nats_url: str, *agents: Agent) -> AsyncIterator[None]:
    """Each agent in its own runtime, logged in to Redis as the agent's own user."""
    async with AsyncExitStack() as stack:
        for agent in agents:
            rt = await stack.enter_async_context(Runtime(as_user(acl, nats_url, agent.name)))
            await rt.serve(agent)
        yield


async def test_agents_and_clients_get_noperm_on_users_tasks_and_sessions(deployed: AclServer) -> None:
    async with connected(deployed, "gateway") as gw, connected(deployed, "session") as ss:
        task = Task(id="t-alice", status=TaskStatus(state="TASK_STATE_COMPLETED"), context_id="ctx")
        await TaskStore(gw, NAMESPACE).save(StoredTask(task=task, owner="alice", replica="r1"))
        session = Session(
            id="s-alice", user_id="alice", profile_id="drafter", remote="remote", objective="secret plan"
        )
        await SessionStore(ss, NAMESPACE).create(session)
    tasks = [
        ("GET", f"{P}task:t-alice"),
        ("ZREVRANGE", f"{P}tasks:alice", 0, -1),
        ("MGET", f"{P}task:t-alice"),
        ("HGETALL", f"{P}push:t-alice"),
        ("ZRANGE", f"{P}pushes:alice", 0, -1),
        ("ZRANGE", f"{P}push-due", 0, -1),
        ("GET", f"{P}push-lease:t-alice|c"),
    ]
    sessions = [
        ("GET", f"{P}session:s-alice"),
        ("ZREVRANGE", f"{P}sessions:alice", 0, -1),
        ("LRANGE", f"{P}session-audit:drafter", 0, -1),
        ("GET", f"{P}session-policy:alice:drafter"),
    ]
    forbidden = {"reader": tasks + sessions, "client": tasks + sessions, "gateway": sessions}
    forbidden |= {"session": tasks, "console": tasks}
    for user, reads in forbidden.items():
        async with connected(deployed, user) as conn:
            for command in reads:
                with pytest.raises(NoPermissionError):
                    await conn.execute_command(*command)  # type: ignore[no-untyped-call]
    # Nor may they follow them live.
    async with connected(deployed, "admin") as admin:
        for user in ("reader", "client"):
            for channel in (f"{P}task-events:t-alice", f"{P}gw-cancel", f"{P}session-events"):
                verdict = await admin.execute_command("ACL", "DRYRUN", user, "SUBSCRIBE", channel)  # type: ignore[no-untyped-call]
                assert verdict != b"OK", (user, channel)
        assert await admin.get(f"{P}task:t-alice") is not None  # the data is there, for its owners


async def test_no_agent_writes_the_grants_or_another_agents_instances(deployed: AclServer) -> None:
    grant = '{"capabilities":["code.edit"],"maxInstances":1000}'
    async with connected(deployed, "admin") as admin:
        await admin.hset(KEYS.grants, "reader", '{"capabilities":["code.read"],"maxInstances":2}')
        try:
            for user in ("reader", "client", "gateway", "session", "console"):
                async with connected(deployed, user) as conn:
                    assert await conn.hgetall(KEYS.grants)  # everyone reads the grants (views do)
                    for command in [
                        ("HSET", KEYS.grants, "reader", grant),
                        ("DEL", KEYS.grants),
                        ("ZADD", KEYS.agent_instances("writer"), 1, "reader-1a2b3c4d"),
                        ("ZREM", KEYS.agent_instances("writer"), "writer-1a2b3c4d"),
                    ]:
                        with pytest.raises(NoPermissionError):
                            await conn.execute_command(*command)  # type: ignore[no-untyped-call]
            async with connected(deployed, "reader") as reader:  # its own set, which the registry keeps
                assert await reader.zadd(KEYS.agent_instances("reader"), {"reader-1a2b3c4d": 1}) == 1
                assert await reader.zrem(KEYS.agent_instances("reader"), "reader-1a2b3c4d") == 1
        finally:
            await admin.delete(KEYS.grants)  # the other tests run an open registry


async def test_redis_config_load_writes_the_grants_pinned_from_the_agents_code(
    deployed: AclServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roster = tmp_path / "roster.yaml"  # the writer's capabilities come from its code
    roster.write_text("agents:\n  writer: {}\n  reader: {capabilities: [code.read], max_instances: 2}\n")
    monkeypatch.setenv("REDIS_URL", deployed.url("admin"))
    argv = ["redis-config", "--roster", str(roster), "--namespace", NAMESPACE, "--load"]
    async with connected(deployed, "admin") as admin:
        await admin.hset(KEYS.grants, "gone", '{"capabilities":["x"],"maxInstances":1}')  # a former roster's
        try:
            args = build_parser().parse_args([*argv, "--agents", "a2a.demo.agents:roster"])
            assert await anyio.to_thread.run_sync(run_command, args) == 0
            raw: dict[bytes, bytes] = await admin.hgetall(KEYS.grants)  # type: ignore[assignment]
            written = {k.decode(): json.loads(v) for k, v in raw.items()}
            assert written == {
                "writer": {"capabilities": ["code.edit"], "maxInstances": 32},
                "reader": {"capabilities": ["code.read"], "maxInstances": 2},
            }
            # Without the code, the writer's entry says nothing: refused, and nothing changes.
            assert await anyio.to_thread.run_sync(run_command, build_parser().parse_args(argv)) == 2
            assert set(await admin.hkeys(KEYS.grants)) == {b"writer", b"reader"}
        finally:
            await admin.delete(KEYS.grants)


async def test_the_gateway_keeps_its_tasks_as_its_own_user(deployed: AclServer, nats_url: str) -> None:
    async with (
        serving(deployed, nats_url, echo, slow),
        Runtime(as_user(deployed, nats_url, "gateway")) as runtime,
    ):
        await runtime.wait_for_agents(["echo", "slow"])
        async with gateway_on(runtime) as gw:
            done = await gw.send(message(text="hello"), agent="echo")
            assert done["status"]["state"] == "TASK_STATE_COMPLETED"
            assert (await gw.task(done["id"]))["id"] == done["id"]
            running = await gw.send(
                message(action("wait", seconds=30)), agent="slow", configuration={"returnImmediately": True}
            )
            await gw.wait_state(running["id"], ["TASK_STATE_WORKING"])
            with anyio.fail_after(5):
                cancelled = await gw.rpc("CancelTask", {"id": running["id"]})
            assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
            listed = await gw.list_tasks()
            assert {t["id"] for t in listed["tasks"]} == {done["id"], running["id"]}


async def test_the_gateway_pushes_notifications_as_its_own_user(
    deployed: AclServer, nats_url: str, receiver: Receiver
) -> None:
    config = GatewayConfig(default_timeout=10, push_allow_cidrs=("127.0.0.0/8",), push_backoff=0.2)
    async with (
        serving(deployed, nats_url, echo),
        Runtime(as_user(deployed, nats_url, "gateway")) as runtime,
    ):
        await runtime.wait_for_agents(["echo"])
        async with gateway_on(runtime, config=config) as gw, receiver.up():
            push = {"taskPushNotificationConfig": {"url": receiver.url, "id": "c"}}
            task = await gw.send(message(text="hello"), agent="echo", configuration=push)
            events = await receiver.wait_final(task["id"])
            assert len(events) >= 3, events
            listed = await gw.rpc("ListTaskPushNotificationConfigs", {"taskId": task["id"]})
            assert [c["id"] for c in listed["result"]["configs"]] == ["c"]
            deleted = await gw.rpc("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "c"})
            assert "result" in deleted, deleted


async def test_a_session_runs_as_the_session_user(deployed: AclServer, nats_url: str) -> None:
    received: list[str] = []
    async with (
        serving(deployed, nats_url, *session_agents(received)),
        Runtime(as_user(deployed, nats_url, "session")) as rt,
        Sessions(rt, lease=1.0) as sessions,
    ):
        await rt.wait_for_agents(["drafter", "remote"])
        await sessions.set_policy("bob", "drafter", POLICY)
        started = await sessions.start(
            user_id="bob",
            profile_id="drafter",
            remote="remote",
            objective="the API",
            limits=Limits(max_turns=1),
        )
        await sessions.wait(started.id, "bob", "ready_to_send", timeout=10)
        await sessions.approve(started.id, "bob")
        ended = await sessions.wait(started.id, "bob", "stopped", timeout=10)
        assert [t.text for t in ended.turns if t.role == "remote_agent"] == ["noted"]
        assert received == ["about: the API"]
        assert [s.id for s in await sessions.sessions("bob")] == [started.id]
        assert await sessions.audit("drafter", "bob")


async def test_the_console_serves_sessions_as_its_own_user(deployed: AclServer, nats_url: str) -> None:
    received: list[str] = []
    auth = ConsoleAuth(tokens={"tok-carol": "carol"})
    bearer = {"Authorization": "Bearer tok-carol"}
    async with (
        serving(deployed, nats_url, *session_agents(received)),
        Runtime(as_user(deployed, nats_url, "console")) as rt,
        Sessions(rt, lease=1.0) as sessions,
        anyio.create_task_group() as tg,
    ):
        await rt.wait_for_agents(["drafter", "remote"])
        await sessions.set_policy("carol", "drafter", POLICY)
        port = await tg.start(partial(serve_console, rt, sessions, port=0, auth=auth))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=bearer, timeout=10) as web:
            start = {"local": "drafter", "remote": "remote", "objective": "the API", "maxTurns": 1}
            r = await web.post("/api/sessions", json=start)
            assert r.status_code == 201, r.text
            url = f"/api/sessions/{r.json()['id']}"
            with anyio.fail_after(10):
                while (await web.get(url)).json()["state"] != "ready_to_send":
                    await anyio.sleep(0.05)
            assert (await web.post(f"{url}/approve", json={})).status_code == 200
            with anyio.fail_after(10):  # the session ends; the registry is read as the console's user
                while True:
                    state = (await web.get("/api/state")).json()
                    agents = {a["name"] for a in state["agents"]}
                    if state["sessions"][0]["state"] == "stopped" and {"drafter", "remote"} <= agents:
                        break
                    await anyio.sleep(0.1)
        assert received == ["about: the API"]
        tg.cancel_scope.cancel()


async def test_an_agent_captures_its_calls_history_as_its_own_user(
    deployed: AclServer, nats_url: str
) -> None:
    """The batch write runs as the library's function, which Redis checks against the calling
    agent's rights on every command and key it touches; the summary is read the same way."""
    received: list[str] = []
    _, remote = session_agents(received)
    async with serving(deployed, nats_url, remote), Runtime(as_user(deployed, nats_url, "client")) as rt:
        await rt.wait_for_agents(["remote"])
        for text in ("plan the release", "then ship it"):
            await rt.call("remote", "run", {"text": text}, conversation_id="acl-conv", user_id="bob")
        async with connected(deployed, "admin") as admin:
            with anyio.fail_after(10):
                while await admin.llen(f"{P}conv:acl-conv:messages") < 4:
                    await anyio.sleep(0.05)
            assert await admin.hget(f"{P}conv:acl-conv:meta", "writes") == b"2"
        async with connected(deployed, "remote") as own:
            summary = await HistoryStore(own, NAMESPACE).summary("acl-conv")
            assert summary is not None
            assert "plan the release" in summary and "then ship it" in summary
