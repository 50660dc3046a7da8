"""The paced agents ``tck_run.py --agent paced`` serves behave alike: the bus agent behind the
gateway and the a2a-sdk executor of ``sdk/paced_server.py`` answer the TCK's reference
agent's text, report working, complete in about 1.2 s, and stop when cancelled.

The gateway runs in this process on real nats-server and Redis; the SDK server in its
own virtual environment. Both are driven with plain JSON-RPC 1.0 requests.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from a2a import Settings
from a2a.gateway import GatewayConfig
from tests.interop.conftest import SDK_DIR, origin_gateway, start_sdk_server, stop_sdk_server
from tests.interop.sdk.paced import reply
from tests.interop.tck_agents import paced

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED", "TASK_STATE_REJECTED"}
Target = Callable[[], AbstractAsyncContextManager[str]]


def test_the_answers_are_the_reference_agents() -> None:
    assert (
        reply("Task for cancel test")
        == "Hello World! You said: 'Task for cancel test'. Thanks for your message!"
    )
    assert reply("Hello") == reply("this") == "Hello World! Nice to meet you!"  # "hi" in "this"
    assert reply("how are you") == "I'm doing great! Thanks for asking. How can I help you today?"
    assert reply("bye now") == "Goodbye! Have a wonderful day!"
    assert reply(" ") == "Hello! Please provide a message for me to respond to."


@pytest.fixture
def gateway(settings: Settings) -> Target:
    return lambda: origin_gateway(
        settings, (paced,), GatewayConfig(default_agent="paced", default_timeout=20)
    )


@pytest.fixture
def sdk(sdk_python: Path) -> Target:
    @asynccontextmanager
    async def serve() -> AsyncIterator[str]:
        server = await anyio.to_thread.run_sync(
            lambda: start_sdk_server(sdk_python, SDK_DIR / "paced_server.py")
        )
        try:
            yield server
        finally:
            await anyio.to_thread.run_sync(stop_sdk_server, server.proc)
            server.log_path.unlink(missing_ok=True)

    return serve


async def rpc(client: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await client.post(url + "/", json=body, headers={"A2A-Version": "1.0"})
    result = response.json()
    assert "result" in result, result
    return dict(result["result"])


async def start(client: httpx.AsyncClient, url: str, text: str) -> str:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    params = {"message": message, "configuration": {"returnImmediately": True}}
    return str((await rpc(client, url, "SendMessage", params))["task"]["id"])


async def follow(client: httpx.AsyncClient, url: str, task_id: str) -> tuple[list[str], dict[str, Any]]:
    """The states ``GetTask`` shows every 50 ms until the task ends, and the ended task."""
    states: list[str] = []
    with anyio.fail_after(10):
        while True:
            task = await rpc(client, url, "GetTask", {"id": task_id})
            state = task["status"]["state"]
            if not states or states[-1] != state:
                states.append(state)
            if state in TERMINAL:
                return states, task
            await anyio.sleep(0.05)


@pytest.mark.parametrize("target", ["gateway", "sdk"])
async def test_a_task_works_then_answers_in_about_a_second(
    request: pytest.FixtureRequest, target: str
) -> None:
    serve: Target = request.getfixturevalue(target)
    text = "Task for listing"
    async with serve() as url, httpx.AsyncClient(timeout=10) as client:
        began = time.monotonic()
        states, task = await follow(client, url, await start(client, url, text))
        took = time.monotonic() - began
    assert states[-2:] == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"], states
    assert 1.1 < took < 3, took
    assert [p["text"] for a in task["artifacts"] for p in a["parts"]] == [reply(text)]


@pytest.mark.parametrize("target", ["gateway", "sdk"])
async def test_a_working_task_is_cancelled(request: pytest.FixtureRequest, target: str) -> None:
    serve: Target = request.getfixturevalue(target)
    async with serve() as url, httpx.AsyncClient(timeout=10) as client:
        task_id = await start(client, url, "Task for cancel test")
        await anyio.sleep(0.7)
        assert (await rpc(client, url, "GetTask", {"id": task_id}))["status"]["state"] == "TASK_STATE_WORKING"
        cancelled = await rpc(client, url, "CancelTask", {"id": task_id})
        assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
        await anyio.sleep(1)  # past the time it would have answered
        task = await rpc(client, url, "GetTask", {"id": task_id})
    assert task["status"]["state"] == "TASK_STATE_CANCELED"
    assert not task.get("artifacts")
