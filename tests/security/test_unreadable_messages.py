"""A message nats-py cannot read (its reply subject or header status is not UTF-8, bytes the
server passes on) is dropped and counted: it must not end the receiving runtime's read loop,
which would leave every agent it serves deaf until the next unanswered ping (about 40 s)."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime
from tests.security.conftest import as_user, password
from transports import NatsTransport

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def raw_publish(url: str, user: str, frame: bytes) -> bytes:
    """Send ``frame`` as ``user`` over a plain socket; the server's answer to a PING after it."""
    host, port = url.removeprefix("nats://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.settimeout(2)
        s.recv(4096)  # INFO
        login = b'{"verbose":false,"headers":true,"user":"%s","pass":"%s"}' % (
            user.encode(),
            password(user).encode(),
        )
        s.sendall(b"CONNECT " + login + b"\r\n" + frame + b"PING\r\n")
        return s.recv(4096)


@pytest.mark.parametrize(
    "frame",
    [
        b"PUB a2a.sec.agent.reader.writer \xff 2\r\n{}\r\n",
        b"HPUB a2a.sec.agent.reader.writer 16 18\r\nNATS/1.0 \xff\xff\xff\r\n\r\n{}\r\n",
    ],
    ids=["reply subject", "header status"],
)
async def test_an_unreadable_message_is_dropped_and_the_agent_still_answers(
    secured_nats: str, frame: bytes
) -> None:
    reader = Agent("reader")

    @reader.action("read")
    async def read(ctx: Context, params: dict[str, Any]) -> Any:
        return "ok"

    async with Runtime(as_user(secured_nats, "reader")) as r, Runtime(as_user(secured_nats, "writer")) as w:
        await r.serve(reader)
        assert await w.call("reader", "read", {}, timeout=5) == "ok"
        answer = raw_publish(secured_nats, "writer", frame)
        assert b"-ERR" not in answer, answer  # the generated permissions let the writer send it
        transport = r.bus.link.transport
        assert isinstance(transport, NatsTransport)
        with anyio.fail_after(5):
            while transport.malformed == 0:
                await anyio.sleep(0.02)
        assert await w.call("reader", "read", {}, timeout=3) == "ok"
