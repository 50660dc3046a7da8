"""The console's HTTP API against a real server: who may do what, and bad requests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from a2a.console import ConsoleAuth
from tests.console.conftest import Console

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

START = {
    "local": "drafter",
    "remote": "remote",
    "objective": "check the API",
    "mode": "manual",
    "maxTurns": 1,
}


@pytest.fixture
def auth() -> ConsoleAuth:
    return ConsoleAuth(tokens={"tok-alice": "alice", "tok-bob": "bob"})


@pytest.fixture
async def client(console: Console) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=console.url, timeout=10) as c:
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_without_a_token_nothing_is_served_but_the_login(client: httpx.AsyncClient) -> None:
    assert (await client.get("/")).status_code == 401
    assert (await client.get("/api/state")).status_code == 401
    assert (await client.get("/api/events")).status_code == 401
    assert (await client.post("/api/sessions", json=START)).status_code == 401
    assert (await client.get("/login?token=wrong")).status_code == 401
    assert (await client.get("/api/state", headers=bearer("tok-mallory"))).status_code == 401


async def test_login_sets_an_http_only_cookie_that_the_page_then_uses(client: httpx.AsyncClient) -> None:
    r = await client.get("/login?token=tok-alice")
    assert r.status_code == 303
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    page = await client.get("/")  # the client keeps the cookie
    assert page.status_code == 200 and "A2A console" in page.text
    assert "tok-alice" not in page.text
    assert (await client.get("/api/state")).json()["user"] == "alice"


async def test_a_user_sees_and_steers_only_their_own_sessions(
    console: Console, client: httpx.AsyncClient
) -> None:
    r = await client.post("/api/sessions", json=START, headers=bearer("tok-alice"))
    assert r.status_code == 201, r.text
    session = r.json()
    assert session["userId"] == "alice" and session["limits"]["maxTurns"] == 1
    with anyio.fail_after(10):
        while (await client.get(f"/api/sessions/{session['id']}", headers=bearer("tok-alice"))).json()[
            "state"
        ] != "ready_to_send":
            await anyio.sleep(0.05)
    as_bob = await client.post(f"/api/sessions/{session['id']}/approve", json={}, headers=bearer("tok-bob"))
    assert as_bob.status_code == 404 and as_bob.json()["error"]["code"] == "INVALID_PARAMS"
    assert (await client.get(f"/api/sessions/{session['id']}", headers=bearer("tok-bob"))).status_code == 404
    assert (await client.get("/api/state", headers=bearer("tok-bob"))).json()["sessions"] == []
    assert console.received == []
    ok = await client.post(f"/api/sessions/{session['id']}/approve", json={}, headers=bearer("tok-alice"))
    assert ok.status_code == 200


async def test_bad_requests_get_typed_errors(client: httpx.AsyncClient) -> None:
    alice = bearer("tok-alice")
    form = await client.post("/api/sessions", data={"local": "drafter"}, headers=alice)  # a form post
    assert form.status_code == 400 and "JSON" in form.json()["error"]["message"]
    cross = await client.post("/api/sessions", json=START, headers={**alice, "Origin": "http://evil.example"})
    assert cross.status_code == 403
    for body, word in [
        ({**START, "mode": "reckless"}, "mode"),
        ({**START, "objective": "  "}, "objective"),
        ({**START, "maxTurns": 0}, "maxTurns"),
        ({**START, "remote": "drafter"}, "itself"),
        ({**START, "local": "bad name!"}, "local agent"),
    ]:
        r = await client.post("/api/sessions", json=body, headers=alice)
        assert r.status_code == 400 and word in r.json()["error"]["message"], (body, r.text)
    big = await client.post(
        "/api/sessions",
        content=b'{"x": "' + b"a" * 70_000 + b'"}',
        headers={**alice, "Content-Type": "application/json"},
    )
    assert big.status_code == 400
    unknown = await client.post("/api/sessions/sess_nope/explode", json={}, headers=alice)
    assert unknown.status_code in (400, 404)
    assert (await client.get("/static/../app.py", headers=alice)).status_code == 404


async def test_the_body_is_checked_field_by_field(client: httpx.AsyncClient) -> None:
    alice = bearer("tok-alice")
    for body, word in [
        ({**START, "objective": None}, "objective must be a string"),
        ({**START, "local": {"a": 1}}, "local must be a string"),
        ({**START, "maxTurns": 10**30}, "maxTurns"),
        ({**START, "maxTurns": "5"}, "maxTurns"),
        ({**START, "maxDurationMs": 0}, "maxDurationMs"),
    ]:
        r = await client.post("/api/sessions", json=body, headers=alice)
        assert r.status_code == 400 and word in r.json()["error"]["message"], (body, r.text)
    r = await client.post(
        "/api/sessions", json={**START, "maxDurationMs": 60_000, "maxFailures": 2}, headers=alice
    )
    assert r.status_code == 201 and r.json()["limits"]["maxDurationMs"] == 60_000
    assert r.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("auth", [ConsoleAuth("local")])
async def test_without_credentials_only_loopback_names_are_answered(console: Console) -> None:
    port = console.url.rsplit(":", 1)[1]
    async with httpx.AsyncClient(base_url=console.url, timeout=10) as c:
        assert (await c.get("/api/state")).status_code == 200
        assert (await c.get("/api/state", headers={"Host": f"localhost:{port}"})).status_code == 200
        rebound = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}
        assert (await c.get("/api/state", headers=rebound)).status_code == 421
        assert (await c.post("/api/sessions", json=START, headers=rebound)).status_code == 421
        other_scheme = {"Origin": f"https://127.0.0.1:{port}"}
        assert (await c.post("/api/sessions", json=START, headers=other_scheme)).status_code == 403
