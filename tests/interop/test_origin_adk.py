"""Google ADK's ``RemoteA2aAgent`` given only the gateway's origin card URL.

``tests/interop/adk/remote_turn.py`` builds the agent from
``<origin>/.well-known/agent-card.json`` and runs one turn with plain text through ADK's
``Runner`` and an in-memory session service; no model takes part. ADK resolves the card
and builds its client with the a2a-sdk it depends on. The gateway and the bus agents run
in this process on real nats-server and Redis; ADK runs in a venv of its own.
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
from tests.interop.conftest import SdkOutput, origin_gateway, run_adk

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SEVERAL = (agents.echo, agents.slow, agents.front)
OPTIONS = [
    pytest.param((), None, id="adk-defaults"),
    pytest.param(("--streaming",), ("/", "SendStreamingMessage"), id="jsonrpc-streaming"),
    pytest.param(("--no-streaming",), ("/", "SendMessage"), id="jsonrpc-blocking"),
    pytest.param(("--prefer", "HTTP+JSON"), ("/message:stream", None), id="http-json-streaming"),
    pytest.param(
        ("--prefer", "HTTP+JSON", "--no-streaming"), ("/message:send", None), id="http-json-blocking"
    ),
]
"""Options of remote_turn.py, and the (path, JSON-RPC method) of the message it then sends."""


@pytest.fixture
def adk(adk_python: Path) -> Callable[..., Any]:
    async def run(*args: str, timeout: float = 90) -> SdkOutput:
        return await anyio.to_thread.run_sync(
            lambda: run_adk(adk_python, "remote_turn.py", *args, timeout=timeout)
        )

    return run


@pytest.mark.parametrize(("options", "sent"), OPTIONS)
async def test_one_turn_through_the_origin_answers_with_the_default_agent(
    settings: Settings, adk: Any, options: tuple[str, ...], sent: tuple[str, str | None] | None
) -> None:
    config = GatewayConfig(default_timeout=20, default_agent="echo")
    async with origin_gateway(settings, SEVERAL, config) as url:
        out = (await adk("--url", url, *options, "hello café")).ok()
        assert out.last("answer")["text"] == "hello café"
        assert all(line["author"] == "remote" for line in out.events("adk")), list(out)
        if sent is not None:
            posts = [
                (r["path"], r["method"], r["version"]) for r in out.events("request") if r["verb"] == "POST"
            ]
            assert posts == [(*sent, "1.0")], list(out)


async def test_the_origin_card_is_the_default_agents(settings: Settings, adk: Any) -> None:
    config = GatewayConfig(default_timeout=20, default_agent="front", origin_card="agent")
    async with origin_gateway(settings, SEVERAL, config) as url:
        out = (await adk("--url", url, "relayed")).ok()
        # ADK hands an A2A data part to its session as text/plain bytes between these tags.
        data = [p["data"] for line in out.events("adk") for p in line["parts"] if "data" in p]
        assert data == ['<a2a_datapart_json>{"relayed": "relayed"}</a2a_datapart_json>'], list(out)


async def test_with_several_agents_and_no_default_the_turn_reports_the_refusal(
    settings: Settings, adk: Any
) -> None:
    async with origin_gateway(settings, SEVERAL, GatewayConfig(default_timeout=20)) as url:
        out = await adk("--url", url, "whose?")
        assert out.returncode == 1 and out.error is not None, list(out)
        assert "--default-agent" in out.error["message"], out.error
