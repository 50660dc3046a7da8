"""The gateway's own URL as a standard client finds it: plain messages, trailing slashes, the origin card."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from a2a import Settings
from a2a.cli.main import build_parser, run_command
from a2a.gateway import GatewayConfig

from .agents import echo, slow
from .conftest import AGENTS, V1, Gateway, gateway_on, message, rpc_body, runtime_serving

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

CARD = "/.well-known/agent-card.json"
COMPLETED = "TASK_STATE_COMPLETED"


def texts(task: dict[str, Any]) -> list[Any]:
    return [p.get("text", p.get("data")) for a in task.get("artifacts", []) for p in a["parts"]]


async def rpc_send(gw: Gateway, path: str, text: str) -> dict[str, Any]:
    """The JSON-RPC answer to a plain text ``SendMessage`` posted to ``path`` (no redirect)."""
    r = await gw.client.post(path, json=rpc_body("SendMessage", {"message": message(text=text)}), headers=V1)
    assert r.status_code == 200, (r.status_code, r.text)
    body: dict[str, Any] = r.json()
    return body


async def rest_send(gw: Gateway, path: str, text: str) -> httpx.Response:
    return await gw.client.post(path, json={"message": message(text=text)}, headers=V1)


async def test_a_plain_message_reaches_the_default_agent(settings: Settings) -> None:
    config = GatewayConfig(default_timeout=10, default_agent="echo")
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=config) as gw:
        answer = await rpc_send(gw, "/", "to the origin")
        task = answer["result"]["task"]
        assert task["status"]["state"] == COMPLETED, task
        assert texts(task) == ["to the origin"] and task["metadata"]["agent"] == "echo"
        r = await rest_send(gw, "/message:send", "by rest")
        assert r.status_code == 200, r.text
        assert texts(r.json()["task"]) == ["by rest"]
        # A skill still routes by capability, and an agent named in a data part wins.
        by_skill = await gw.send(message({"data": {"seconds": 0}}), metadata={"skillId": "waiting"})
        assert by_skill["metadata"]["agent"] == "slow" and texts(by_skill) == ["waited"]
        relay = {"action": "relay", "agent": "front", "params": {"text": "x"}}
        named = await gw.send(message({"data": relay}))
        assert named["metadata"]["agent"] == "front"
        # An action data part naming no agent is the default agent's, as on its own endpoint.
        data = await gw.send(message({"data": {"action": "say", "params": {"text": "data"}}}))
        assert data["metadata"]["agent"] == "echo" and texts(data) == ["data"]
        card = (await gw.client.get(CARD)).json()
        assert "goes to the agent echo" in card["description"], card["description"]
        assert card["name"] == config.name and "echoing" in {s["id"] for s in card["skills"]}


async def test_with_one_live_agent_the_origin_routes_to_it(settings: Settings) -> None:
    async with runtime_serving(settings, echo) as runtime, gateway_on(runtime) as gw:
        task = (await rpc_send(gw, "/", "only one"))["result"]["task"]
        assert task["status"]["state"] == COMPLETED and texts(task) == ["only one"]
        card = (await gw.client.get(CARD)).json()
        assert "goes to the agent echo, the only live agent" in card["description"], card["description"]


async def test_with_several_agents_and_no_default_the_error_says_what_to_do(settings: Settings) -> None:
    async with runtime_serving(settings, echo, slow) as runtime, gateway_on(runtime) as gw:
        error = (await rpc_send(gw, "/", "whose?"))["error"]
        assert error["code"] == -32602
        text = error["message"]
        assert "2 agents (echo, slow)" in text, text
        for advice in ("metadata.skillId", "/agents/<name>", "--default-agent"):
            assert advice in text, text
        r = await rest_send(gw, "/message:send", "whose?")
        assert r.status_code == 400 and r.json()["error"]["message"] == text
        card = (await gw.client.get(CARD)).json()
        assert "a message naming none is refused" in card["description"], card["description"]
        assert "/agents/<name>" in card["description"]
        # Naming a skill still works.
        ok = await gw.send(message(text="by skill"), metadata={"skillId": "echoing"})
        assert texts(ok) == ["by skill"]


async def test_a_default_agent_that_is_not_live_is_named(settings: Settings) -> None:
    config = GatewayConfig(default_timeout=10, default_agent="ghost")
    async with runtime_serving(settings, echo) as runtime, gateway_on(runtime, config=config) as gw:
        error = (await rpc_send(gw, "/", "anyone?"))["error"]
        assert error["code"] == -32602 and "ghost" in error["message"], error


async def test_the_origin_card_can_be_the_default_agents(settings: Settings) -> None:
    config = GatewayConfig(default_timeout=10, default_agent="echo", origin_card="agent")
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=config) as gw:
        origin = (await gw.client.get(CARD)).json()
        own = (await gw.client.get(f"/agents/echo{CARD}")).json()
        assert origin["name"] == "echo" and origin["description"] == "Repeats what it is given"
        assert {i["url"] for i in origin["supportedInterfaces"]} == {gw.url}
        assert origin["url"] == gw.url
        # The agent's card but for the URL it names.
        assert {**origin, "supportedInterfaces": None, "url": None} == {
            **own,
            "supportedInterfaces": None,
            "url": None,
        }
        task = (await rpc_send(gw, origin["url"], "through the card"))["result"]["task"]
        assert texts(task) == ["through the card"]


async def test_the_origin_card_of_an_agent_that_is_not_live_is_503(settings: Settings) -> None:
    config = GatewayConfig(default_timeout=10, default_agent="ghost", origin_card="agent")
    async with runtime_serving(settings, echo) as runtime, gateway_on(runtime, config=config) as gw:
        r = await gw.client.get(CARD)
        assert r.status_code == 503 and r.json()["error"]["status"] == "UNAVAILABLE"


@pytest.mark.parametrize(
    "fields",
    [{"origin_card": "agent"}, {"default_agent": "a.b"}, {"origin_card": "other", "default_agent": "echo"}],
)
def test_the_config_refuses_an_origin_it_cannot_serve(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        GatewayConfig(**fields)


def test_the_command_line_refuses_a_default_agent_that_is_no_agent_name() -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["gateway", "--default-agent", "a.b"])
    assert exit_.value.code == 2
    assert build_parser().parse_args(["gateway", "--default-agent", "echo"]).default_agent == "echo"


def test_the_command_line_refuses_an_agent_origin_card_without_a_default_agent() -> None:
    assert run_command(build_parser().parse_args(["gateway", "--origin-card", "agent"])) == 2
