"""A hostile client of the console's API: bodies nested past any decoder's depth, slow requests.

The console runs as ``a2a console`` would run it (a runtime, its sessions, uvicorn on a free
port) on real servers.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from functools import partial

import anyio
import httpx
import pytest

from a2a import Runtime, Settings
from a2a.console import ConsoleAuth, serve_console
from a2a.sessions import Sessions
from a2a.web import ReadLimits

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TOKEN = {"Authorization": "Bearer console-token"}
JSON = {"Content-Type": "application/json", **TOKEN}
NESTED = b"[" * 60_000


@pytest.fixture
async def console(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    auth = ConsoleAuth(tokens={"console-token": "alice"})
    async with Runtime(settings) as rt, Sessions(rt) as sessions, anyio.create_task_group() as tg:
        port = await tg.start(partial(serve_console, rt, sessions, port=0, auth=auth))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    "path", ["/api/sessions", "/api/sessions/sess_x/pause", "/api/sessions/sess_x/write"]
)
@pytest.mark.parametrize("body", [NESTED, b"[" * 5000 + b"]" * 5000, b'{"objective": ' + NESTED + b"}"])
async def test_a_deeply_nested_body_is_a_typed_400(
    console: httpx.AsyncClient, path: str, body: bytes
) -> None:
    r = await console.post(path, content=body, headers=JSON)
    assert r.status_code == 400, r.text[:200]
    assert r.json()["error"]["code"] == "INVALID_PARAMS"
    assert (await console.get("/api/state", headers=TOKEN)).status_code == 200


async def test_slow_requests_to_the_console_are_closed(settings: Settings) -> None:
    auth = ConsoleAuth(tokens={"console-token": "alice"})
    limits = ReadLimits(header_timeout=1.0, body_timeout=1.5)
    async with Runtime(settings) as rt, Sessions(rt) as sessions, anyio.create_task_group() as tg:
        port = await tg.start(partial(serve_console, rt, sessions, port=0, auth=auth, limits=limits))
        with anyio.fail_after(10):
            head, body = await _both(port)
        tg.cancel_scope.cancel()
    assert 0.9 <= head[0] <= 6 and head[1] in (b"HTTP/1.1 408", b"")
    assert 1.4 <= body[0] <= 6 and body[1] in (b"HTTP/1.1 408", b"")


async def _both(port: int) -> tuple[tuple[float, bytes], tuple[float, bytes]]:
    found: dict[str, tuple[float, bytes]] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(_slow, port, b"POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"x", "head", found)
        head = (
            b"POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer console-token\r\n"
            b"Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
        )
        tg.start_soon(_slow, port, head, b"[", "body", found)
    return found["head"], found["body"]


async def _slow(
    port: int, first: bytes, byte: bytes, name: str, found: dict[str, tuple[float, bytes]]
) -> None:
    """Send ``first``, then ``byte`` every 0.25 s until the server closes: (seconds, its answer)."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    start, answer = time.monotonic(), b""
    await stream.send(first)
    try:
        while True:
            await stream.send(byte)
            with anyio.move_on_after(0.25):
                answer += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        pass
    await stream.aclose()
    found[name] = (time.monotonic() - start, answer[:12])
