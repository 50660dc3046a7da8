"""What the console says about a person's controls, over HTTP against real servers: an edited
draft reads ``user-edited``, take over says what became of the waiting draft, and the remote
agents a local agent may send to (what the page's pickers default to)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from a2a.console import ConsoleAuth
from tests.console.conftest import Console

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ALICE = {"Authorization": "Bearer tok-alice"}
START = {
    "local": "drafter",
    "remote": "remote",
    "objective": "check the API",
    "mode": "manual",
    "maxTurns": 3,
}


@pytest.fixture
def auth() -> ConsoleAuth:
    return ConsoleAuth(tokens={"tok-alice": "alice", "tok-bob": "bob"})


@pytest.fixture
async def client(console: Console) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=console.url, timeout=10, headers=ALICE) as c:
        yield c


async def waiting(client: httpx.AsyncClient, session_id: str, turns: int) -> dict[str, Any]:
    """The session once a draft waits after ``turns`` turns."""
    with anyio.fail_after(10):
        while True:
            s = (await client.get(f"/api/sessions/{session_id}")).json()
            if s["state"] == "ready_to_send" and len(s["turns"]) == turns:
                return s  # type: ignore[no-any-return]
            await anyio.sleep(0.05)


async def test_an_edited_draft_reads_user_edited_and_take_over_says_what_became_of_the_draft(
    console: Console, client: httpx.AsyncClient
) -> None:
    r = await client.post("/api/sessions", json=START)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    s = await waiting(client, sid, 0)
    same = await client.post(f"/api/sessions/{sid}/approve", json={"text": s["draft"]})  # unchanged
    assert same.status_code == 200 and "notice" not in same.json()
    await waiting(client, sid, 2)
    assert (await client.post(f"/api/sessions/{sid}/approve", json={"text": "my words"})).status_code == 200
    s = await waiting(client, sid, 4)
    assert [t["sentBy"] for t in s["turns"]] == ["user_approved", None, "user_edited", None]
    assert [r.text for r in console.received] == [s["turns"][0]["text"], "my words"]

    state = (await client.get("/api/state")).json()
    [mine] = state["sessions"]
    assert [t["sentBy"] for t in mine["turns"]] == ["user_approved", None, "user_edited", None]

    draft = s["draft"]
    taken = (await client.post(f"/api/sessions/{sid}/takeover", json={})).json()
    assert taken["takeover"] is True and taken["draft"] is None
    assert taken["setAside"] == draft
    assert "set aside and not sent" in taken["notice"]
    again = (await client.post(f"/api/sessions/{sid}/takeover", json={})).json()
    assert (
        again["notice"] == "You had taken over already: write the next message." and again["setAside"] is None
    )
    back = (await client.post(f"/api/sessions/{sid}/handback", json={})).json()
    assert back["takeover"] is False and "notice" not in back


async def test_a_draft_that_arrives_after_take_over_waits_for_the_person_in_every_mode(
    console: Console, client: httpx.AsyncClient
) -> None:
    for mode in ("manual", "full_auto"):
        r = await client.post("/api/sessions", json={**START, "mode": mode, "objective": "delay:1000"})
        sid = r.json()["id"]
        with anyio.fail_after(10):
            while (await client.get(f"/api/sessions/{sid}")).json()["state"] != "waiting_local":
                await anyio.sleep(0.02)
        taken = (await client.post(f"/api/sessions/{sid}/takeover", json={})).json()
        assert "it will wait here, never sent by itself" in taken["notice"] and taken["setAside"] is None
        with anyio.fail_after(10):  # the draft arrives, and is not sent, even in full_auto
            while (s := (await client.get(f"/api/sessions/{sid}")).json())["draft"] is None:
                await anyio.sleep(0.02)
        await anyio.sleep(0.5)
        s = (await client.get(f"/api/sessions/{sid}")).json()
        assert s["state"] == "ready_to_send" and s["turns"] == [] and "set aside" in s["review"], s
        assert (await client.post(f"/api/sessions/{sid}/stop", json={})).status_code == 200


async def test_the_remote_agents_a_local_agent_may_send_to(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/policies/drafter")
    assert r.status_code == 200 and r.json() == {
        "local": "drafter",
        "allowShared": True,
        "remotes": ["remote"],
    }
    assert (await client.get("/api/policies/nobody")).json() == {
        "local": "nobody",
        "allowShared": False,
        "remotes": [],
    }
    bad = await client.get("/api/policies/bad name!")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_PARAMS"
    assert "Traceback" not in bad.text
    assert (
        await client.get("/api/policies/drafter", headers={"Authorization": "Bearer nope"})
    ).status_code == 401


async def test_a_control_with_a_bad_body_gets_a_typed_error(client: httpx.AsyncClient) -> None:
    sid = (await client.post("/api/sessions", json=START)).json()["id"]
    for body, code in [({"text": 5}, 400), ({"text": ["a"]}, 400)]:
        r = await client.post(f"/api/sessions/{sid}/approve", json=body)
        assert r.status_code == code and r.json()["error"]["code"] == "INVALID_PARAMS", r.text
    r = await client.post(f"/api/sessions/{sid}/explode", json={})
    assert r.status_code == 400 and "unknown control" in r.json()["error"]["message"]
    r = await client.post("/api/sessions/sess_nope/approve", json={})
    assert r.status_code == 404
