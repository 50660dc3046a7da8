"""A hostile remote A2A agent against the attach proxy: compression bombs and redirects.

A raw HTTP/1.1 server in the test plays the remote agent. It serves well-formed cards whose
endpoints answer with a gzip bomb (0.5 MB inflating to 512 MB) as a JSON-RPC answer or as an
SSE stream, a card that is itself a bomb, cards and endpoints that redirect, and an agent that
gzips honest answers. The proxy runs as a stranger runs it, ``python -m a2a attach URL``, on
real nats-server and Redis; its memory is read from ``/proc/<pid>/status`` after its peak was
reset through ``/proc/<pid>/clear_refs``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from a2a import Runtime, Settings
from a2a.dev.servers import die_with_parent
from a2a.errors import A2AError, AgentError, PayloadTooLarge
from a2a.external import A2AClient, Endpoint, fetch_card
from tests.helpers import ROOT, agent_env
from transports.a2a_http import Message, Part

pytestmark = [pytest.mark.integration, pytest.mark.security, pytest.mark.anyio]

MB = 1 << 20
GROWTH_LIMIT = 20 * MB
"""RSS a process may grow by while refusing one bomb."""
CONCURRENT = 6


def _gzip(blocks: Iterator[bytes], level: int = 9) -> bytes:
    packer = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join([*(packer.compress(block) for block in blocks), packer.flush()])


@pytest.fixture(scope="module")
def zero_bomb() -> bytes:
    """512 MB of zero bytes, gzipped to about 0.5 MB."""
    zeros = bytes(MB)
    return _gzip(zeros for _ in range(512))


@pytest.fixture(scope="module")
def event_bomb() -> bytes:
    """One SSE event of 128 MB in lines of 1 KB, gzipped to about 0.3 MB."""
    block = (b"data: " + b"x" * 1017 + b"\n") * 1024
    return _gzip(block for _ in range(128))


# -- the remote agent ------------------------------------------------------------------------


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def _card(base: str, agent: str, *, streaming: bool) -> bytes:
    return json.dumps(
        {
            "name": agent,
            "description": "a hostile agent",
            "version": "1.0",
            "supportedInterfaces": [
                {"url": f"{base}/{agent}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": streaming},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "echo", "description": "echoes", "tags": ["echo"]}],
        }
    ).encode()


def _message_answer(rpc_id: Any, text: str) -> bytes:
    message = {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": {"message": message}}).encode()


def _deflate(body: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return packer.compress(body) + packer.flush()


class HostileAgent:
    """The remote agents, by path prefix: ``/<agent>/.well-known/agent-card.json`` and ``/<agent>/rpc``.

    ``json``, ``sse`` and ``line`` answer every call with a bomb (JSON, an SSE event of many
    lines, an SSE line of zeros); ``cardbomb``'s card is a bomb; ``moved`` and ``away``
    redirect their card (same origin, another origin); ``moved-rpc`` redirects its calls;
    ``gzip``, ``deflate``, ``rawdeflate`` and ``gzip-sse`` compress honest answers; ``br``
    answers in an encoding nobody asked for.
    """

    def __init__(self, zero_bomb: bytes, event_bomb: bytes) -> None:
        self.bombs = {"zeros": zero_bomb, "events": event_bomb}
        self.port = 0
        self.requests: list[tuple[str, str, str]] = []
        """Method, path and ``Accept-Encoding`` of every request, in order."""

    def url(self, path: str = "", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def answer(self, method: str, path: str, body: bytes) -> Answer:
        agent, _, rest = path.strip("/").partition("/")
        gzipped = {"Content-Encoding": "gzip"}
        card_path = ".well-known/agent-card.json"
        if method == "GET" and rest == card_path:
            if agent == "cardbomb":
                return Answer(
                    headers={**gzipped, "Content-Type": "application/json"}, body=self.bombs["zeros"]
                )
            if agent == "moved":
                return Answer(302, {"Location": f"/gzip/{card_path}"})
            if agent == "away":
                return Answer(302, {"Location": self.url(f"/gzip/{card_path}", host="localhost")})
            card = _card(self.url(), agent, streaming=agent in ("sse", "line", "gzip-sse"))
            return Answer(headers={**gzipped, "Content-Type": "application/json"}, body=_gzip(iter([card])))
        if method != "POST" or rest != "rpc":
            return Answer(404, body=b"not found")
        if agent == "json":
            return Answer(headers={**gzipped, "Content-Type": "application/json"}, body=self.bombs["zeros"])
        if agent in ("sse", "line"):
            bomb = self.bombs["events" if agent == "sse" else "zeros"]
            return Answer(headers={**gzipped, "Content-Type": "text/event-stream"}, body=bomb)
        if agent == "moved-rpc":
            return Answer(307, {"Location": self.url("/gzip/rpc")})
        request = json.loads(body)
        text = request["params"]["message"]["parts"][0]["text"]
        answer = _message_answer(request["id"], text)
        if agent == "gzip-sse":
            stream = b"".join(b"data: " + answer + b"\r\n\r\n" for _ in range(3))
            return Answer(
                headers={**gzipped, "Content-Type": "text/event-stream"}, body=_gzip(iter([stream]))
            )
        encodings = {
            "gzip": ("gzip", _gzip(iter([answer]))),
            "deflate": ("deflate", _deflate(answer, zlib.MAX_WBITS)),
            "rawdeflate": ("deflate", _deflate(answer, -zlib.MAX_WBITS)),
            "br": ("br", answer),
        }
        if agent not in encodings:
            return Answer(404, body=b"no such agent")
        encoding, encoded = encodings[agent]
        return Answer(
            headers={"Content-Encoding": encoding, "Content-Type": "application/json"}, body=encoded
        )

    async def handle(self, stream: anyio.abc.ByteStream) -> None:
        # The client may hang up at any point (a refused answer): that ends this exchange only.
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._exchange(stream)

    async def _exchange(self, stream: anyio.abc.ByteStream) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(10):
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    head += await stream.receive()
            header_block, _, body = head.partition(b"\r\n\r\n")
            request_line, *lines = header_block.decode("latin-1").split("\r\n")
            method, path, _ = request_line.split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
            self.requests.append((method, path, headers.get("accept-encoding", "")))
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                body += await stream.receive()
            answer = self.answer(method, path, body)
            fields = {**answer.headers, "Content-Length": str(len(answer.body)), "Connection": "close"}
            head_out = f"HTTP/1.1 {answer.status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
            await stream.send(head_out.encode() + b"\r\n")
            for start in range(0, len(answer.body), 65536):
                await stream.send(answer.body[start : start + 65536])


@pytest.fixture
async def remote(zero_bomb: bytes, event_bomb: bytes) -> AsyncIterator[HostileAgent]:
    agent = HostileAgent(zero_bomb, event_bomb)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    agent.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, agent.handle)
        yield agent
        tg.cancel_scope.cancel()


# -- the proxy, as a stranger runs it ----------------------------------------------------------


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid``, in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = (line.split() for line in status.splitlines() if line.startswith(("VmRSS", "VmHWM")))
    return {name.rstrip(":"): int(kb) * 1024 for name, kb, *_ in fields}


def reset_peak(pid: int) -> int:
    """Reset the peak RSS of ``pid``; returns its RSS now."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return memory(pid)["VmRSS"]


async def growth_while(pid: int, attack: Callable[[], Any]) -> int:
    """How far the peak RSS of ``pid`` rose above its RSS before ``attack()``."""
    before = reset_peak(pid)
    await attack()
    return memory(pid)["VmHWM"] - before


@contextlib.contextmanager
def attach_process(settings: Settings, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m a2a attach <args>``, stopped on the way out."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "a2a", "attach", *args],
            env=agent_env(settings, OTEL_SDK_DISABLED="true"),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.seek(0)
            output = log.read().decode(errors="replace")
            assert "Traceback" not in output, output


@pytest.mark.parametrize(
    "agent",
    ["json", "sse", "line"],
    ids=["json-answer", "sse-event-of-many-lines", "sse-line-of-zeros"],
)
async def test_a_gzip_bomb_answer_is_refused_with_bounded_memory(
    settings: Settings, remote: HostileAgent, agent: str
) -> None:
    name = f"bomb-{agent}"
    with attach_process(settings, remote.url(f"/{agent}/"), "--name", name) as proc:
        async with Runtime(settings) as caller:
            await caller.wait_for_agents([name], timeout=15)

            async def one_call() -> None:
                with pytest.raises(PayloadTooLarge):
                    await caller.call(name, "echo", {"text": "boom"}, timeout=8)

            async def concurrent_calls() -> None:
                async with anyio.create_task_group() as tg:
                    for _ in range(CONCURRENT):
                        tg.start_soon(one_call)

            with anyio.fail_after(30):
                single = await growth_while(proc.pid, one_call)
                several = await growth_while(proc.pid, concurrent_calls)
                await one_call()  # the proxy still serves
            assert proc.poll() is None
    print(
        f"\n{agent}: RSS growth {single / MB:.1f} MB (one bomb), {several / MB:.1f} MB ({CONCURRENT} at once)"
    )
    assert single < GROWTH_LIMIT
    assert several < CONCURRENT * GROWTH_LIMIT / 2


async def test_a_card_that_is_a_gzip_bomb_is_refused_with_bounded_memory(remote: HostileAgent) -> None:
    async def fetch() -> None:
        with pytest.raises(PayloadTooLarge):
            await fetch_card(remote.url("/cardbomb/"))

    growth = await growth_while(os.getpid(), fetch)
    print(f"\ncard bomb: RSS growth {growth / MB:.1f} MB")
    assert growth < GROWTH_LIMIT


@pytest.mark.parametrize("headers", [None, {"X-Api-Key": "s3cret"}], ids=["anonymous", "with-credentials"])
async def test_a_card_redirect_is_refused_naming_its_location(
    remote: HostileAgent, headers: dict[str, str] | None
) -> None:
    with pytest.raises(AgentError) as caught:
        await fetch_card(remote.url("/moved/"), headers=headers)
    assert [path for _, path, _ in remote.requests] == ["/moved/.well-known/agent-card.json"]
    assert "/gzip/.well-known/agent-card.json" in caught.value.message
    assert caught.value.details["httpStatus"] == 302
    assert caught.value.details["location"] == remote.url("/gzip/.well-known/agent-card.json")


async def test_redirects_allowed_by_configuration_keep_credentials_on_the_cards_origin(
    remote: HostileAgent,
) -> None:
    card, location = await fetch_card(remote.url("/moved/"), follow_redirects=True)
    assert card.name == "gzip" and location == remote.url("/gzip/.well-known/agent-card.json")
    elsewhere = remote.url("/gzip/.well-known/agent-card.json", host="localhost")
    _, location = await fetch_card(remote.url("/away/"), follow_redirects=True)
    assert location == elsewhere
    with pytest.raises(AgentError, match="localhost"):  # the credentials would follow
        await fetch_card(remote.url("/away/"), headers={"X-Api-Key": "k"}, follow_redirects=True)
    _, location = await fetch_card(
        remote.url("/away/"), headers={"X-Api-Key": "k"}, follow_redirects=True, any_origin=True
    )
    assert location == elsewhere


def _attach_cli(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a2a", "attach", url],
        env={
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),
            "NATS_URL": "nats://127.0.0.1:1",  # refused before any server is reached
            "REDIS_URL": "redis://127.0.0.1:1/0",
            "OTEL_SDK_DISABLED": "true",
        },
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=20,
    )


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        ("moved", "/gzip/.well-known/agent-card.json"),
        ("cardbomb", "PAYLOAD_TOO_LARGE"),
    ],
    ids=["card-redirect", "card-bomb"],
)
async def test_the_attach_command_refuses_in_one_line(remote: HostileAgent, agent: str, says: str) -> None:
    done = await anyio.to_thread.run_sync(_attach_cli, remote.url(f"/{agent}/"))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert says in done.stderr


def _message(text: str) -> Message:
    return Message(message_id="q-1", role="ROLE_USER", parts=[Part(text=text)])


def _client(remote: HostileAgent, agent: str) -> A2AClient:
    return A2AClient(Endpoint(remote.url(f"/{agent}/rpc"), "JSONRPC", "1.0"))


async def test_a_redirected_call_is_refused_naming_its_location(remote: HostileAgent) -> None:
    async with _client(remote, "moved-rpc") as client:
        with pytest.raises(AgentError) as caught:
            await client.send(_message("x"), timeout=5)
    assert [path for _, path, _ in remote.requests] == ["/moved-rpc/rpc"]
    assert remote.url("/gzip/rpc") in caught.value.message
    assert caught.value.details["location"] == remote.url("/gzip/rpc")


@pytest.mark.parametrize("agent", ["gzip", "deflate", "rawdeflate"])
async def test_compressed_honest_answers_are_read(remote: HostileAgent, agent: str) -> None:
    async with _client(remote, agent) as client:
        answer = await client.send(_message("héllo " * 1000), timeout=5)
    assert isinstance(answer, Message) and answer.parts[0].text == "héllo " * 1000
    assert remote.requests[-1][2] == "gzip, deflate"


async def test_a_compressed_stream_is_read(remote: HostileAgent) -> None:
    async with (
        _client(remote, "gzip-sse") as client,
        contextlib.aclosing(client.stream(_message("streamed"), timeout=5)) as events,
    ):
        got = [event async for event in events]
    assert [event.message.parts[0].text for event in got if event.message] == ["streamed"] * 3


async def test_an_encoding_not_asked_for_is_a_typed_error(remote: HostileAgent) -> None:
    async with _client(remote, "br") as client:
        with pytest.raises(A2AError) as caught:
            await client.send(_message("x"), timeout=5)
    assert caught.value.code == "AGENT_ERROR" and "br" in caught.value.message
