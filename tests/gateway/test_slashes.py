"""A trailing slash names the same resource: served in place, never redirected."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import V1, Gateway, message, rpc_body

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

CARD = "/.well-known/agent-card.json"


def texts(task: dict[str, Any]) -> list[Any]:
    return [p.get("text", p.get("data")) for a in task.get("artifacts", []) for p in a["parts"]]


@pytest.mark.parametrize("slash", ["", "/"])
async def test_an_agent_endpoint_with_or_without_a_trailing_slash(gateway: Gateway, slash: str) -> None:
    client = gateway.client  # follows no redirect: a 307 would be the answer itself
    rpc = await client.post(
        f"/agents/echo{slash}", json=rpc_body("SendMessage", {"message": message(text="slash")}), headers=V1
    )
    assert rpc.status_code == 200, (rpc.status_code, rpc.text)
    assert texts(rpc.json()["result"]["task"]) == ["slash"]
    old = {"messageId": "m", "role": "user", "kind": "message", "parts": [{"kind": "text", "text": "0.3"}]}
    legacy = await client.post(f"/agents/echo{slash}", json=rpc_body("message/send", {"message": old}))
    assert legacy.status_code == 200 and legacy.json()["result"]["status"]["state"] == "completed"
    rest = await client.post(
        f"/agents/echo/message:send{slash}", json={"message": message(text="rest")}, headers=V1
    )
    assert rest.status_code == 200, (rest.status_code, rest.text)
    task_id = rest.json()["task"]["id"]
    for path in (f"/agents/echo/tasks/{task_id}{slash}", f"/tasks/{task_id}{slash}", f"/tasks{slash}"):
        got = await client.get(path, headers=V1)
        assert got.status_code == 200, (path, got.status_code, got.text)
    stream = await client.post(
        f"/agents/echo/message:stream{slash}", json={"message": message(text="s")}, headers=V1
    )
    assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
    card = await client.get(f"/agents/echo{CARD}{slash}")
    assert card.status_code == 200 and card.json()["name"] == "echo"
    assert (await client.get(f"{CARD}{slash}")).status_code == 200


@pytest.mark.parametrize("path", ["/agents/echo/nothing", "/agents/echo/nothing/", "/agents", "/agents/"])
async def test_unknown_paths_are_404_never_a_redirect(gateway: Gateway, path: str) -> None:
    r = await gateway.client.post(path, json={}, headers=V1)
    assert r.status_code == 404, (path, r.status_code)


async def test_an_encoded_slash_is_not_a_trailing_slash(gateway: Gateway) -> None:
    r = await gateway.client.post(
        "/agents/echo%2F", json=rpc_body("SendMessage", {"message": message()}), headers=V1
    )
    assert r.status_code == 404  # no route: the name is not echo
