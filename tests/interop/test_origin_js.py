"""The official JavaScript SDK (``@a2a-js/sdk``) given only the gateway's origin.

``tests/interop/js/client.mjs`` builds its client with the SDK's ``ClientFactory``
from the base URL alone: the SDK's card resolver reads ``/.well-known/agent-card.json``
and the factory picks a transport from the card's interfaces. It sends plain text with
no metadata of this project. The gateway and the bus agents run in this process on real
nats-server and Redis; node runs in a copy of ``tests/interop/js`` installed by ``npm ci``.
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
from tests.interop.conftest import SdkOutput, origin_gateway, run_node

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

COMPLETED = "TASK_STATE_COMPLETED"
SEVERAL = (agents.echo, agents.slow, agents.front)


@pytest.fixture
def js(js_project: Path) -> Callable[..., Any]:
    async def run(*args: str, timeout: float = 60) -> SdkOutput:
        return await anyio.to_thread.run_sync(
            lambda: run_node(js_project, "client.mjs", *args, timeout=timeout)
        )

    return run


def texts(task: dict[str, Any]) -> list[Any]:
    return [p.get("text", p.get("data")) for a in task.get("artifacts", []) for p in a["parts"]]


@pytest.mark.parametrize(
    ("preferred", "chosen"),
    [
        pytest.param((), "JSONRPC", id="card-order"),
        pytest.param(("--transport", "HTTP+JSON"), "HTTP+JSON", id="http-json"),
    ],
)
async def test_a_plain_message_to_the_origin_reaches_the_default_agent(
    settings: Settings, js: Any, preferred: tuple[str, ...], chosen: str
) -> None:
    config = GatewayConfig(default_timeout=20, default_agent="echo")
    async with origin_gateway(settings, SEVERAL, config) as url:
        out = (await js("--url", url, *preferred, "send", "hello café")).ok()
        assert out.last("transport") == {"event": "transport", "protocol": chosen, "version": "1.0"}
        task = out.last("task")["task"]
        assert task["status"]["state"] == COMPLETED
        assert texts(task) == ["hello café"] and task["metadata"]["agent"] == "echo"


@pytest.mark.parametrize("preferred", [(), ("--transport", "HTTP+JSON")], ids=["card-order", "http-json"])
async def test_the_origin_card_is_the_default_agents_and_streams(
    settings: Settings, js: Any, preferred: tuple[str, ...]
) -> None:
    config = GatewayConfig(default_timeout=20, default_agent="front", origin_card="agent")
    async with origin_gateway(settings, SEVERAL, config) as url:
        card = (await js("--url", url, "card")).ok().last("card")["card"]
        assert card["name"] == "front" and {s["id"] for s in card["skills"]} == {"relay", "steps"}
        assert {i["url"] for i in card["supportedInterfaces"]} == {url}
        out = (await js("--url", url, *preferred, "stream", "relayed")).ok()
        final = out.events("statusUpdate")[-1]["statusUpdate"]
        assert final["status"]["state"] == COMPLETED
        assert out.last("artifactUpdate")["artifactUpdate"]["artifact"]["parts"][0]["data"] == {
            "relayed": "relayed"
        }


async def test_with_several_agents_and_no_default_the_client_is_told_what_to_do(
    settings: Settings, js: Any
) -> None:
    async with origin_gateway(settings, SEVERAL, GatewayConfig(default_timeout=20)) as url:
        out = await js("--url", url, "send", "whose?")
        assert out.returncode == 1 and out.error is not None, list(out)
        # The SDK names -32602 (InvalidParams) RequestMalformedError.
        assert (out.error["type"], out.error["code"]) == ("RequestMalformedError", -32602), out.error
        for advice in ("metadata.skillId", "/agents/<name>", "--default-agent"):
            assert advice in out.error["message"], out.error
