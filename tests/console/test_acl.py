"""The console under the Redis ACL ``a2a redis-config`` generates, logged in as its own user
``console``: starting, approving (an edit too) and reading sessions use only the commands and
keys that user is granted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path

import anyio
import httpx
import pytest

from a2a import Runtime, Settings
from a2a.console import ConsoleAuth, serve_console
from a2a.sessions import Sessions, SharedCallPolicy
from tests.security.redis_acl import AclServer, running_acl, session_agents

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

NAMESPACE = "consoleacl"


@pytest.fixture
def acl(tmp_path: Path) -> Iterator[AclServer]:
    with running_acl(tmp_path, ("drafter", "remote"), NAMESPACE) as deployed:
        yield deployed


def settings(acl: AclServer, nats_url: str, user: str) -> Settings:
    return Settings(nats_url=nats_url, redis_url=acl.url(user), namespace=NAMESPACE, heartbeat_interval=0.3)


async def test_an_edit_is_remembered_as_the_consoles_own_redis_user(acl: AclServer, nats_url: str) -> None:
    async with AsyncExitStack() as stack:
        for agent in session_agents():
            agent_rt = await stack.enter_async_context(Runtime(settings(acl, nats_url, agent.name)))
            await agent_rt.serve(agent)
        rt = await stack.enter_async_context(Runtime(settings(acl, nats_url, "console")))
        sessions = await stack.enter_async_context(Sessions(rt))
        tg = await stack.enter_async_context(anyio.create_task_group())
        await rt.wait_for_agents(["drafter", "remote"])
        policy = SharedCallPolicy(allow_shared_agent_calls=True, allowed_shared_device_ids=["remote"])
        await sessions.set_policy("local", "drafter", policy)
        port = await tg.start(partial(serve_console, rt, sessions, port=0, auth=ConsoleAuth("local")))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as web:
            start = {"local": "drafter", "remote": "remote", "objective": "the API", "maxTurns": 1}
            url = f"/api/sessions/{(await web.post('/api/sessions', json=start)).json()['id']}"
            with anyio.fail_after(10):
                while (await web.get(url)).json()["state"] != "ready_to_send":
                    await anyio.sleep(0.05)
            assert (await web.post(f"{url}/approve", json={"text": "edited"})).status_code == 200
            with anyio.fail_after(10):
                while (s := (await web.get(url)).json())["state"] != "stopped":
                    await anyio.sleep(0.05)
            assert [t["sentBy"] for t in s["turns"]] == ["user_edited", None]
        tg.cancel_scope.cancel()
