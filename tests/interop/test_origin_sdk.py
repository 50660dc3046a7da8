"""The official SDK's client that only knows the gateway's origin: standard discovery, a plain text message.

The client reads ``<origin>/.well-known/agent-card.json``, builds its transport from the
card's interfaces and sends text with no metadata of this project (no ``skillId``). The
gateway and the bus agents run in this process on real nats-server and Redis; the SDK
client runs in its own virtual environment, driven from a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from a2a import Settings
from a2a.gateway import GatewayConfig
from tests.gateway import agents
from tests.interop.conftest import SdkOutput, origin_gateway, run_sdk_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

COMPLETED = "TASK_STATE_COMPLETED"
COMBOS = [
    pytest.param("jsonrpc", "1.0", id="jsonrpc-1.0"),
    pytest.param("rest", "1.0", id="rest-1.0"),
    pytest.param("jsonrpc", "0.3", id="jsonrpc-0.3"),
]
SEVERAL = (agents.echo, agents.slow, agents.front)


@pytest.fixture
def sdk(sdk_python: Path) -> Callable[..., Any]:
    async def run(*args: str, timeout: float = 60) -> SdkOutput:
        return await anyio.to_thread.run_sync(lambda: run_sdk_client(sdk_python, *args, timeout=timeout))

    return run


def texts(task: dict[str, Any]) -> list[Any]:
    return [p.get("text", p.get("data")) for a in task.get("artifacts", []) for p in a["parts"]]


@pytest.mark.parametrize(("binding", "version"), COMBOS)
async def test_a_plain_message_to_the_origin_reaches_the_default_agent(
    settings: Settings, sdk: Any, binding: str, version: str
) -> None:
    config = GatewayConfig(default_timeout=20, default_agent="echo")
    async with origin_gateway(settings, SEVERAL, config) as url:
        out = (await sdk("--url", url, "--binding", binding, "--version", version, "send", "hello café")).ok()
        task = out.last("task")
        assert task["status"]["state"] == COMPLETED
        assert texts(task) == ["hello café"] and task["metadata"]["agent"] == "echo"


async def test_the_origin_card_is_the_default_agents(settings: Settings, sdk: Any) -> None:
    config = GatewayConfig(default_timeout=20, default_agent="front", origin_card="agent")
    async with origin_gateway(settings, SEVERAL, config) as url:
        card = (await sdk("--url", url, "card")).ok().last("card")
        assert card["name"] == "front" and {s["id"] for s in card["skills"]} == {"relay", "steps"}
        assert {i["url"] for i in card["supportedInterfaces"]} == {url}
        out = (await sdk("--url", url, "stream", "relayed")).ok()
        final = out.events("status-update")[-1]
        assert final["status"]["state"] == COMPLETED
        assert out.last("artifact-update")["artifact"]["parts"][0]["data"] == {"relayed": "relayed"}


async def test_with_one_live_agent_the_origin_needs_no_option(settings: Settings, sdk: Any) -> None:
    async with origin_gateway(settings, (agents.echo,), GatewayConfig(default_timeout=20)) as url:
        out = (await sdk("--url", url, "--binding", "rest", "send", "only one")).ok()
        assert texts(out.last("task")) == ["only one"]


async def test_with_several_agents_and_no_default_the_client_is_told_what_to_do(
    settings: Settings, sdk: Any
) -> None:
    async with origin_gateway(settings, SEVERAL, GatewayConfig(default_timeout=20)) as url:
        card = (await sdk("--url", url, "card")).ok().last("card")
        assert "a message naming none is refused" in card["description"]
        out = await sdk("--url", url, "send", "whose?")
        assert out.returncode == 1 and out.error is not None, list(out)
        assert out.error["type"] == "InvalidParamsError", out.error
        for advice in ("metadata.skillId", "/agents/<name>", "--default-agent"):
            assert advice in out.error["message"], out.error
