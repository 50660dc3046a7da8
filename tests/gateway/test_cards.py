"""Agent cards: caching by ETag, following the registry as agents come and go, the actions extension."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Settings
from a2a.gateway import GatewayConfig

from .agents import newcomer
from .conftest import AGENTS, Gateway, gateway_on, message, runtime_serving

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

GATEWAY_CARD = "/.well-known/agent-card.json"
ACTIONS = "urn:a2a-runtime:actions:v1"


def card_path(agent: str) -> str:
    return f"/agents/{agent}{GATEWAY_CARD}"


def skill_ids(card: dict[str, Any]) -> set[str]:
    return {s["id"] for s in card["skills"]}


def actions_extension(card: dict[str, Any]) -> dict[str, Any]:
    (ext,) = [x for x in card["capabilities"]["extensions"] if x["uri"] == ACTIONS]
    return dict(ext["params"])


@pytest.mark.parametrize("path", [GATEWAY_CARD, card_path("echo")])
async def test_if_none_match_answers_304(gateway: Gateway, path: str) -> None:
    first = await gateway.client.get(path)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert etag.startswith('W/"')
    again = await gateway.client.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    other = await gateway.client.get(path, headers={"If-None-Match": 'W/"something-else"'})
    assert other.status_code == 200 and other.json() == first.json()


@pytest.mark.parametrize(
    "header",
    [pytest.param('W/"something-else", {etag}', id="list"), pytest.param("*", id="star")],
)
async def test_if_none_match_with_several_tags(gateway: Gateway, header: str) -> None:
    etag = (await gateway.client.get(GATEWAY_CARD)).headers["etag"]
    r = await gateway.client.get(GATEWAY_CARD, headers={"If-None-Match": header.format(etag=etag)})
    assert r.status_code == 304


async def test_cards_follow_agents_that_start_and_stop(gateway: Gateway, settings: Settings) -> None:
    before = await gateway.client.get(GATEWAY_CARD)
    assert "arriving" not in skill_ids(before.json())
    assert (await gateway.client.get(card_path("newcomer"))).status_code == 404

    async def card_until(has_newcomer: bool) -> Any:
        with anyio.fail_after(5):
            while True:
                r = await gateway.client.get(GATEWAY_CARD)
                if ("arriving" in skill_ids(r.json())) == has_newcomer:
                    return r
                await anyio.sleep(0.05)

    async with runtime_serving(settings, newcomer):
        during = await card_until(True)
        skill = next(s for s in during.json()["skills"] if s["id"] == "arriving")
        assert skill["description"] == "turns up late" and "newcomer" in skill["tags"]
        assert during.headers["etag"] != before.headers["etag"]
        stale = await gateway.client.get(GATEWAY_CARD, headers={"If-None-Match": before.headers["etag"]})
        assert stale.status_code == 200
        card = await gateway.client.get(card_path("newcomer"))
        assert card.status_code == 200 and skill_ids(card.json()) == {"greet"}
        task = await gateway.send(
            message({"data": {"action": "greet", "params": {"name": "you"}}}), agent="newcomer"
        )
        assert task["artifacts"][0]["parts"] == [{"text": "hello you"}]
        by_skill = await gateway.send(message({"data": {"name": "skill"}}), metadata={"skillId": "arriving"})
        assert by_skill["artifacts"][0]["parts"] == [{"text": "hello skill"}]
    after = await card_until(False)
    assert after.headers["etag"] == before.headers["etag"]
    assert skill_ids(after.json()) == skill_ids(before.json())
    assert (await gateway.client.get(card_path("newcomer"))).status_code == 404
    gone = await gateway.rpc("SendMessage", {"message": message()}, agent="newcomer")
    assert gone["error"]["code"] == -32602


@pytest.mark.parametrize("name", ["ghost", "a.b", "ECHO", "echo%20", "echo%2Fx"])
async def test_the_card_of_an_unknown_agent_is_404(gateway: Gateway, name: str) -> None:
    r = await gateway.client.get(card_path(name))
    assert r.status_code == 404
    if r.headers["content-type"].startswith("application/json"):  # else no route matched at all
        assert r.json()["error"]["status"] == "NOT_FOUND"


async def test_the_actions_extension_carries_the_input_schemas(gateway: Gateway) -> None:
    echo_card = (await gateway.client.get(card_path("echo"))).json()
    assert skill_ids(echo_card) == {"say"}
    params = actions_extension(echo_card)
    assert params["actions"]["say"]["inputSchema"] == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
    }
    assert params["defaultAction"] is None and params["instances"] == 1
    slow_card = (await gateway.client.get(card_path("slow"))).json()
    assert skill_ids(slow_card) == {"wait", "refuse", "whoami"}
    assert actions_extension(slow_card)["defaultAction"] == "wait"
    assert set(actions_extension(slow_card)["actions"]) == {"wait", "refuse", "whoami"}


async def test_an_agent_card_describes_its_own_endpoint(gateway: Gateway) -> None:
    card = (await gateway.client.get(card_path("echo"))).json()
    assert card["name"] == "echo" and card["description"] == "Repeats what it is given"
    bindings = {(i["protocolBinding"], i["protocolVersion"]): i["url"] for i in card["supportedInterfaces"]}
    assert bindings == {
        ("JSONRPC", "1.0"): f"{gateway.url}/agents/echo",
        ("HTTP+JSON", "1.0"): f"{gateway.url}/agents/echo",
        ("JSONRPC", "0.3"): f"{gateway.url}/agents/echo",
    }
    # The 0.3 keys, for 0.3 clients.
    assert card["url"] == f"{gateway.url}/agents/echo" and card["preferredTransport"] == "JSONRPC"
    assert card["capabilities"]["streaming"] is True
    assert "securitySchemes" not in card or card["securitySchemes"] == {}


async def test_cards_use_the_public_url(settings: Settings) -> None:
    config = GatewayConfig(public_url="https://agents.example.com/a2a/", default_timeout=10)
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=config) as gw:
        card = (await gw.client.get(GATEWAY_CARD)).json()
        assert {i["url"] for i in card["supportedInterfaces"]} == {"https://agents.example.com/a2a"}
        card = (await gw.client.get(card_path("slow"))).json()
        assert card["url"] == "https://agents.example.com/a2a/agents/slow"
