"""A hostile HTTP client of the gateway: slow requests, stream floods, forged Host headers, deep JSON.

Every case runs a real gateway (uvicorn on a free port) over a runtime that serves the
gateway tests' agents on real nats-server and Redis processes; the attackers are raw TCP
sockets or httpx clients.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from a2a import Settings
from a2a.gateway import Authenticator, GatewayConfig, JwtConfig
from tests.gateway.conftest import (
    AGENTS,
    ERROR_INFO,
    V1,
    Gateway,
    action,
    gateway_on,
    message,
    rpc_body,
    runtime_serving,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

CARDS = ("/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json")
HEAD_TIMEOUT = 1.5
BODY_TIMEOUT = 2.5
SLOW_CLIENTS = 300
LATE = 5.0
"""Seconds past its timeout a slow client may still be open on a loaded machine."""


@pytest.fixture
async def gateway(settings: Settings) -> AsyncIterator[Gateway]:
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime) as gw:
        yield gw


@dataclass
class Held:
    """When the server closed each slow connection (seconds after it began) and what it answered."""

    closed: dict[str, list[tuple[float, bytes]]] = field(
        default_factory=lambda: {"head": [], "body": [], "silent": []}
    )
    open: dict[str, int] = field(default_factory=lambda: {"head": 0, "body": 0, "silent": 0})


async def slow_client(port: int, kind: str, held: Held, limit: float) -> None:
    """One connection that sends its head (``head``) or its 1 MB body (``body``) a byte at a time,
    or nothing at all (``silent``), until the server closes it or ``limit`` seconds pass."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    start = time.monotonic()
    if kind == "head":
        await stream.send(b"POST / HTTP/1.1\r\nHost: gateway\r\n")
    elif kind == "body":
        await stream.send(
            b"POST / HTTP/1.1\r\nHost: gateway\r\nA2A-Version: 1.0\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
        )

    async def trickle() -> None:
        while kind != "silent":
            await anyio.sleep(0.25)
            try:
                await stream.send(b"x")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return

    answer = b""
    async with anyio.create_task_group() as tg:
        tg.start_soon(trickle)
        with anyio.move_on_after(limit) as waited:
            try:
                while True:
                    answer += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass
        tg.cancel_scope.cancel()
    await stream.aclose()
    if waited.cancelled_caught:
        held.open[kind] += 1
    else:
        held.closed[kind].append((time.monotonic() - start, answer))


async def test_slow_heads_and_bodies_are_closed_by_the_read_timeouts(settings: Settings) -> None:
    config = GatewayConfig(default_timeout=10, header_timeout=HEAD_TIMEOUT, body_timeout=BODY_TIMEOUT)
    # 620 connections keep a 2-core machine busy: heartbeats at a relaxed pace, so the agents
    # the health check calls stay registered while the event loop serves them.
    settings = msgspec.structs.replace(settings, heartbeat_interval=1.0)
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=config) as gw:
        port = int(gw.url.rsplit(":", 1)[1])
        held = Held()
        async with anyio.create_task_group() as tg:
            for _ in range(SLOW_CLIENTS):
                tg.start_soon(slow_client, port, "head", held, HEAD_TIMEOUT + LATE)
                tg.start_soon(slow_client, port, "body", held, BODY_TIMEOUT + LATE)
            for _ in range(20):
                tg.start_soon(slow_client, port, "silent", held, HEAD_TIMEOUT + LATE)
            await anyio.sleep(0.5)
            await gw.healthy()  # served while every slow client is still connected
            assert sum(len(c) for c in held.closed.values()) == 0
        assert held.open == {"head": 0, "body": 0, "silent": 0}, f"still open after the timeouts: {held.open}"
        for kind, timeout in (("head", HEAD_TIMEOUT), ("body", BODY_TIMEOUT), ("silent", HEAD_TIMEOUT)):
            times = [t for t, _ in held.closed[kind]]
            assert min(times) >= timeout - 1.0, (kind, min(times))  # closed by the timeout, not before
            # The answer is 408 (or nothing, when the close overtook the client's last byte).
            answers = {a[:12] for _, a in held.closed[kind]}
            assert answers <= {b"HTTP/1.1 408", b""}, answers
        await gw.healthy()


async def test_a_head_too_large_is_refused_at_once(gateway: Gateway) -> None:
    port = int(gateway.url.rsplit(":", 1)[1])
    stream = await anyio.connect_tcp("127.0.0.1", port)
    answer = b""
    with anyio.fail_after(5):
        try:
            await stream.send(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n")
            for _ in range(256):  # 16 MB of header lines, as fast as they go
                await stream.send(b"X-Filler: " + b"a" * 65536 + b"\r\n")
        except (anyio.BrokenResourceError, OSError):
            pass
        try:
            while True:
                answer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            pass
    await stream.aclose()
    assert answer[:12] in (b"HTTP/1.1 431", b"HTTP/1.1 400", b""), answer[:100]
    await gateway.healthy()


# -- SubscribeToTask ----------------------------------------------------------------------


async def subscribe(
    client: httpx.AsyncClient, streams: AsyncExitStack, task_id: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    """A REST SubscribeToTask kept open in ``streams``: 200 with SSE, or the refusal read whole."""
    r = await streams.enter_async_context(
        client.stream("POST", f"/tasks/{task_id}:subscribe", headers={**V1, **(headers or {})})
    )
    if r.status_code == 200:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = r.aiter_lines()
        streams.callback(_keep, lines)  # an iterator left to the collector would close the stream
        async for line in lines:  # the task now: the stream is live
            if line.startswith("data:"):
                assert "error" not in line
                break
    else:
        await r.aread()
    return r


def _keep(_: object) -> None:
    """Nothing: the stack holds what it is given until it closes."""


def refused_over_the_cap(r: httpx.Response) -> dict[str, Any]:
    """The refusal's ErrorInfo: UnsupportedOperationError (HTTP 400, FAILED_PRECONDITION)."""
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["status"] == "FAILED_PRECONDITION"
    (info,) = [d for d in error["details"] if d["@type"] == ERROR_INFO]
    assert info["reason"] == "UNSUPPORTED_OPERATION"
    return dict(info["metadata"])


@pytest.fixture
async def streams_client(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10, limits=limits) as client:
        yield client


async def running_task(gw: Gateway, headers: dict[str, str] | None = None) -> str:
    task = await gw.send(
        message(action("wait", seconds=30)),
        agent="slow",
        configuration={"returnImmediately": True},
        headers=headers,
    )
    return str(task["id"])


async def test_subscriptions_to_one_task_are_capped_and_given_back(
    gateway: Gateway, streams_client: httpx.AsyncClient
) -> None:
    task_id = await running_task(gateway)
    async with AsyncExitStack() as streams:
        answers = [await subscribe(streams_client, streams, task_id) for _ in range(30)]
        assert [r.status_code for r in answers].count(200) == 10
        for r in answers[10:]:
            assert refused_over_the_cap(r) == {"limit": "subscriptionsPerTask", "max": "10"}
        rpc = await gateway.rpc("SubscribeToTask", {"id": task_id})
        assert rpc["error"]["code"] == -32004, rpc
    # Closed streams give their places back.
    with anyio.fail_after(5):
        while True:
            async with AsyncExitStack() as streams:
                again = [await subscribe(streams_client, streams, task_id) for _ in range(10)]
                if all(r.status_code == 200 for r in again):
                    break
            await anyio.sleep(0.1)
    await gateway.client.post(f"/tasks/{task_id}:cancel", headers=V1)


@pytest.fixture
async def keyed_gateway(settings: Settings) -> AsyncIterator[Gateway]:
    keys = {hashlib.sha256(f"key-of-{u}".encode()).digest(): u for u in ("alice", "bob")}
    config = GatewayConfig(default_timeout=10, max_subscriptions_per_task=4, max_subscriptions_per_user=6)
    async with (
        runtime_serving(settings, *AGENTS) as runtime,
        gateway_on(runtime, auth=Authenticator(api_keys=keys), config=config) as gw,
    ):
        yield gw


async def test_subscriptions_of_one_user_are_capped(keyed_gateway: Gateway) -> None:
    gw = keyed_gateway
    alice, bob = {"X-API-Key": "key-of-alice"}, {"X-API-Key": "key-of-bob"}
    first, second = await running_task(gw, alice), await running_task(gw, alice)
    theirs = await running_task(gw, bob)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with (
        httpx.AsyncClient(base_url=gw.url, timeout=10, limits=limits) as client,
        AsyncExitStack() as streams,
    ):
        on_first = [await subscribe(client, streams, first, alice) for _ in range(5)]
        assert [r.status_code for r in on_first] == [200] * 4 + [400]
        assert refused_over_the_cap(on_first[4]) == {"limit": "subscriptionsPerTask", "max": "4"}
        on_second = [await subscribe(client, streams, second, alice) for _ in range(3)]
        assert [r.status_code for r in on_second] == [200, 200, 400]
        assert refused_over_the_cap(on_second[2]) == {"limit": "subscriptionsPerUser", "max": "6"}
        # Another user's streams are counted apart.
        assert (await subscribe(client, streams, theirs, bob)).status_code == 200
    for task_id, headers in ((first, alice), (second, alice), (theirs, bob)):
        await gw.client.post(f"/tasks/{task_id}:cancel", headers={**V1, **headers})


# -- the Host header ------------------------------------------------------------------------


@pytest.mark.parametrize("path", CARDS)
async def test_cards_name_the_bound_address_whatever_the_host_header(gateway: Gateway, path: str) -> None:
    forged = {"Host": "evil.example:666", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
    for headers in (forged, {}):
        r = await gateway.client.get(path, headers=headers)
        assert r.status_code == 200
        card = r.json()
        urls = {i["url"] for i in card["supportedInterfaces"]} | {card["url"]}
        assert all(url.startswith(gateway.url) for url in urls), urls
        assert "evil" not in r.text


# -- deeply nested JSON ------------------------------------------------------------------------

NESTED = b"[" * 60_000
REST_WITH_BODIES = (
    "/message:send",
    "/message:stream",
    "/agents/echo/message:send",
    "/tasks/t1:cancel",
    "/tasks/t1:subscribe",
)


def with_data(data: bytes, *, rpc: bool = False) -> bytes:
    """A SendMessage body (REST, or JSON-RPC) whose one data part is ``data``, spliced in unparsed."""
    params = {"message": message({"data": {"spliced": 0}})}
    body = json.dumps(rpc_body("SendMessage", params) if rpc else params).encode()
    return body.replace(b'{"spliced": 0}', data)


async def test_deeply_nested_json_gets_a_typed_error_at_every_json_edge(gateway: Gateway) -> None:
    json_type = {**V1, "Content-Type": "application/json"}
    for path in ("/", "/agents/echo"):
        r = await gateway.client.post(path, content=NESTED, headers=json_type)
        assert r.status_code == 200 and r.json()["error"]["code"] == -32700, r.text
    for path in REST_WITH_BODIES:
        r = await gateway.client.post(path, content=NESTED, headers=json_type)
        assert r.status_code == 400, (path, r.status_code, r.text[:200])
        assert r.json()["error"]["details"][0]["reason"] == "INVALID_REQUEST"
    # Nesting that decodes here but is too deep to encode further on (stored, sent on the bus):
    # refused at the edge, whatever the depth, on both bindings.
    for depth in range(860, 1001):
        deep = b"[" * depth + b"]" * depth
        r = await gateway.client.post("/agents/echo", content=with_data(deep, rpc=True), headers=json_type)
        assert r.status_code == 200 and r.json()["error"]["code"] in (-32602, -32700), (depth, r.text[:200])
        r = await gateway.client.post("/agents/echo/message:send", content=with_data(deep), headers=json_type)
        assert r.status_code == 400, (depth, r.text[:200])
        assert r.json()["error"]["details"][0]["reason"] in ("INVALID_PARAMS", "INVALID_REQUEST")
    # Data nested as deep as JSON reasonably goes is served.
    deep = b"[" * 100 + b"]" * 100
    r = await gateway.client.post("/agents/echo/message:send", content=with_data(deep), headers=json_type)
    assert r.status_code == 200 and r.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED", r.text
    await gateway.healthy()


async def test_a_bearer_token_of_nested_json_is_401(settings: Settings, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s" * 40)
    auth = Authenticator.from_files(None, JwtConfig(secret_file=secret))

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    token = f"{part(b'[' * 5000)}.{part(b'[' * 500)}.c2ln"
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, auth=auth) as gw:
        r = await gw.client.get("/tasks", headers={**V1, "Authorization": f"Bearer {token}"})
        assert r.status_code == 401, r.text
