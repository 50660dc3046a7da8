"""A server that cannot be used is reported at once (or when the connect window ends), with why:
nothing listens, it speaks another protocol, it says nothing."""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from a2a import Runtime, Settings
from a2a.core.connect import listen_to
from a2a.dev.servers import NatsServer, free_port
from bus.errors import Unavailable

from .conftest import a2a, clean_env

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SLOW = 8.0
"""A loose bound on a report's time: far above the second or so it takes on a quiet machine."""


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


@pytest.fixture
def http_port() -> Iterator[int]:
    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A listener that accepts connections (the kernel's backlog) and never says a word."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def _nats_case(url: str, tmp_path: Path, *args: str) -> tuple[float, str, int]:
    env = clean_env(tmp_path, NATS_URL=url, REDIS_URL="redis://127.0.0.1:1/0")
    started = time.monotonic()
    out = a2a(*args, env=env)
    return time.monotonic() - started, out.stderr, out.returncode


@pytest.mark.parametrize("command", [("call", "echo", "echo"), ("serve", "tests.cli.agents:stepper")])
def test_nothing_listening_is_connection_refused(command: tuple[str, ...], tmp_path: Path) -> None:
    took, err, status = _nats_case(f"nats://127.0.0.1:{free_port()}", tmp_path, *command)
    assert status == 1 and err.count("\n") == 1, err
    assert "UNAVAILABLE: cannot connect to NATS at nats://127.0.0.1:" in err
    assert "within 1s: connection refused: nothing listens there" in err
    assert took < SLOW


@pytest.mark.parametrize("command", [("call", "echo", "echo"), ("serve", "tests.cli.agents:stepper")])
def test_a_redis_server_is_not_a_nats_server(
    command: tuple[str, ...], redis_url: str, tmp_path: Path
) -> None:
    took, err, status = _nats_case(f"nats://127.0.0.1:{_port(redis_url)}", tmp_path, *command)
    assert status == 1 and err.count("\n") == 1, err
    assert "not a NATS server: a Redis server answered ('+PONG')" in err and "within" not in err
    assert took < SLOW


def test_an_http_server_is_not_a_nats_server(http_port: int, tmp_path: Path) -> None:
    took, err, status = _nats_case(f"nats://127.0.0.1:{http_port}", tmp_path, "call", "echo", "echo")
    assert status == 1 and "not a NATS server: an HTTP server answered" in err, err
    assert took < SLOW


def test_a_silent_server_is_named_when_the_window_ends(silent_port: int, tmp_path: Path) -> None:
    took, err, status = _nats_case(f"nats://127.0.0.1:{silent_port}", tmp_path, "call", "echo", "echo")
    assert status == 1 and err.count("\n") == 1, err
    assert "within 1s: the server accepted the connection but answered nothing: is it a NATS server?" in err
    assert took < SLOW


async def test_a_runtime_opening_says_the_same(redis_url: str) -> None:
    settings = Settings(nats_url=f"nats://127.0.0.1:{_port(redis_url)}", redis_url=None)
    with pytest.raises(Unavailable, match=r"not a NATS server: a Redis server answered"):
        async with Runtime(settings):
            pass


@pytest.mark.parametrize(
    "command",
    [("agents",), ("history",), ("history", "some-conversation"), ("serve", "tests.cli.agents:stepper")],
)
def test_a_nats_server_is_not_redis(command: tuple[str, ...], nats_url: str, tmp_path: Path) -> None:
    env = clean_env(tmp_path, NATS_URL=nats_url, REDIS_URL=f"redis://127.0.0.1:{_port(nats_url)}/0")
    out = a2a(*command, env=env)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    where = f"redis://127.0.0.1:{_port(nats_url)}/0"
    assert f"UNAVAILABLE: cannot use Redis at {where}: not a Redis server: a NATS server" in out.stderr


def test_a_refused_or_silent_redis_is_named(silent_port: int, nats_url: str, tmp_path: Path) -> None:
    refused = clean_env(tmp_path, NATS_URL=nats_url, REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    out = a2a("agents", env=refused)
    assert out.returncode == 1 and "connection refused: nothing listens there" in out.stderr, out.stderr
    silent = clean_env(tmp_path, NATS_URL=nats_url, REDIS_URL=f"redis://127.0.0.1:{silent_port}/0")
    started = time.monotonic()
    out = a2a("agents", env=silent)
    assert out.returncode == 1 and "answered nothing: is it a Redis server?" in out.stderr, out.stderr
    assert time.monotonic() - started < SLOW


async def test_listen_to_tells_nats_from_redis(nats_url: str, redis_url: str) -> None:
    nats = await listen_to("127.0.0.1", _port(nats_url))
    assert nats.kind == "nats" and nats.info is not None and "server_id" in nats.info
    redis = await listen_to("127.0.0.1", _port(redis_url))
    assert redis.kind == "redis" and redis.said == "+PONG"
    nobody = await listen_to("127.0.0.1", free_port())
    assert nobody.kind == "refused"


def test_the_default_servers_are_named(tmp_path: Path) -> None:
    env = clean_env(tmp_path, A2A_CONNECT_TIMEOUT="0.5")
    out = a2a("call", "nobody", "act", "--timeout", "2", env=env)
    first = out.stderr.splitlines()[0]
    assert first == (
        "a2a call: using the default NATS nats://127.0.0.1:4222 and Redis redis://127.0.0.1:6379/0"
        " (no --nats-url, NATS_URL or running 'a2a up')"
    )


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_a_server_that_requires_tls_is_named(tmp_path: Path) -> None:
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
         "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    config = tmp_path / "tls.conf"
    config.write_text(
        f'tls {{\n  cert_file: "{tmp_path / "cert.pem"}"\n  key_file: "{tmp_path / "key.pem"}"\n}}\n'
    )
    with NatsServer(config_file=config, jetstream=False) as server:
        took, err, status = _nats_case(server.url, tmp_path, "call", "echo", "echo")
        assert status == 1 and err.count("\n") == 1, err
        assert "within 1s: the server requires TLS: set NATS_TLS_CA to its CA certificate" in err
        assert "CERTIFICATE_VERIFY_FAILED" in err and took < SLOW
        trusted = clean_env(tmp_path, NATS_URL=server.url, NATS_TLS_CA=str(tmp_path / "cert.pem"))
        out = a2a("call", "nobody", "act", "--timeout", "3", env=trusted)
        assert "NO_RESPONDERS" in out.stderr, out.stderr  # connected: nobody serves it
