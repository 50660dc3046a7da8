"""What ``discovery.cluster`` takes from redis-py beyond its documented API, checked on the installed version.

:class:`discovery.cluster.SlotMasterConnection` subclasses redis-py's asyncio ``Connection``
and overrides methods redis-py documents for its own use only: ``connect_check_health``
(where each connect attempt looks the slot's master up), ``read_response`` (where MOVED and
the other redirections are heard), ``register_connect_callback`` (how a subscriber's
connection is told apart), and it relies on ``mark_for_reconnect`` and on the pool dropping
such a connection when it is released. pyproject.toml pins redis below its next major
version; when an upgrade changes any of this, a test here fails and says what to re-check
in ``discovery/cluster.py``. None of them needs a cluster: the few that talk to a server
talk to a fake node on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import socket
import tomllib
from collections.abc import AsyncIterator, Callable
from importlib.metadata import version
from typing import Any

import pytest
import redis.asyncio as aioredis
import redis.exceptions as rx
from packaging.requirements import Requirement
from packaging.version import Version
from redis.asyncio.client import PubSub
from redis.asyncio.connection import AbstractConnection, Connection, ConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from discovery.cluster import MasterUnreachable, SlotMaster, SlotMasterConnection
from tests.helpers import ROOT

REDIS = version("redis")
EMPTY = inspect.Parameter.empty
POSITIONAL = inspect.Parameter.POSITIONAL_OR_KEYWORD
KEYWORD = inspect.Parameter.KEYWORD_ONLY
SLOT = 1234

pytestmark = pytest.mark.anyio


def _shape(function: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def _changed(what: str) -> str:
    return (
        f"redis {REDIS}: {what} is not what discovery.cluster.SlotMasterConnection relies on "
        "(re-check that module against this redis-py before widening the pin in pyproject.toml)"
    )


def test_the_dependency_is_pinned_below_the_next_major_and_the_installed_redis_fits() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (requirement,) = [Requirement(d) for d in dependencies if Requirement(d).name == "redis"]
    upper = [s for s in requirement.specifier if s.operator == "<"]
    assert upper, "redis must stay below its next major version: discovery.cluster uses its internals"
    assert Version(REDIS) in requirement.specifier, f"redis {REDIS} is outside {requirement}"


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("connect", [("self", POSITIONAL, EMPTY)]),
        (
            "connect_check_health",
            [
                ("self", POSITIONAL, EMPTY),
                ("check_health", POSITIONAL, True),
                ("retry_socket_connect", POSITIONAL, True),
            ],
        ),
        (
            "read_response",
            [
                ("self", POSITIONAL, EMPTY),
                ("disable_decoding", POSITIONAL, False),
                ("timeout", POSITIONAL, None),
                ("disconnect_on_error", KEYWORD, True),
                ("push_request", KEYWORD, False),
            ],
        ),
        ("register_connect_callback", [("self", POSITIONAL, EMPTY), ("callback", POSITIONAL, EMPTY)]),
        ("deregister_connect_callback", [("self", POSITIONAL, EMPTY), ("callback", POSITIONAL, EMPTY)]),
        ("mark_for_reconnect", [("self", POSITIONAL, EMPTY)]),
        ("should_reconnect", [("self", POSITIONAL, EMPTY)]),
        ("repr_pieces", [("self", POSITIONAL, EMPTY)]),
    ],
)
def test_the_overridden_and_called_connection_methods_keep_their_signatures(
    method: str, expected: list[tuple[str, Any, Any]]
) -> None:
    assert _shape(getattr(AbstractConnection, method)) == expected, _changed(f"Connection.{method}")


def test_the_other_connection_members_it_uses_are_there() -> None:
    disconnect = _shape(AbstractConnection.disconnect)
    assert disconnect[:2] == [("self", POSITIONAL, EMPTY), ("nowait", POSITIONAL, False)], _changed(
        "Connection.disconnect(nowait)"
    )
    assert all(default is not EMPTY for _, _, default in disconnect[2:]), _changed("Connection.disconnect")
    assert isinstance(inspect.getattr_static(AbstractConnection, "is_connected"), property), _changed(
        "Connection.is_connected"
    )
    assert {"host", "port"} <= set(inspect.signature(Connection.__init__).parameters), _changed(
        "Connection(host=, port=)"
    )
    options = set(inspect.signature(AbstractConnection.__init__).parameters)
    assert {"retry", "username", "password", "credential_provider", "socket_timeout"} <= options
    assert "socket_connect_timeout" in options and "lib_name" in options


def test_the_redirection_errors_keep_their_classes_and_fields() -> None:
    moved = rx.MovedError("1234 10.0.0.7:7001")
    assert isinstance(moved, rx.AskError) and isinstance(moved, rx.ResponseError), _changed("MovedError")
    assert (moved.slot_id, moved.node_addr) == (SLOT, ("10.0.0.7", 7001)), _changed("AskError fields")
    for name in ("TryAgainError", "ClusterDownError", "ReadOnlyError"):
        assert issubclass(getattr(rx, name), rx.ResponseError), _changed(name)
    assert issubclass(rx.AuthenticationError, rx.ConnectionError), _changed("AuthenticationError")


def test_only_pub_sub_registers_connect_callbacks() -> None:
    """A connection that gets a connect callback is taken for a subscriber's, left on its node."""
    source = inspect.getsource(aioredis.client)
    callers = {m.start() for m in re.finditer(r"\.register_connect_callback\(", source)}
    pubsub = inspect.getsource(PubSub)
    start = source.index(pubsub)
    assert callers and all(start <= at < start + len(pubsub) for at in callers), _changed(
        "who calls register_connect_callback (PubSub only)"
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_each_connect_attempt_of_the_retry_looks_the_master_up_again() -> None:
    """``Connection.connect`` runs ``connect_check_health`` once per attempt of its retry."""
    master = SlotMaster([("127.0.0.1", _closed_port())], SLOT)
    conn = SlotMasterConnection(slot_master=master, retry=Retry(NoBackoff(), 2, (MasterUnreachable,)))
    with pytest.raises(MasterUnreachable):
        await conn.connect()
    assert master.lookups == 3, _changed("Connection.connect retrying connect_check_health")


MOVED_TO = ("10.0.0.7", 7001)


@pytest.fixture
async def moved_node() -> AsyncIterator[tuple[str, int]]:
    """A node that no longer serves the slot: GET is answered MOVED, PING PONG, anything else OK."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):  # a client gone
            while line := await reader.readline():
                args = []
                for _ in range(int(line[1:])):
                    size = int((await reader.readline())[1:])
                    args.append((await reader.readexactly(size + 2))[:-2])
                command = args[0].upper()
                if command == b"GET":
                    writer.write(f"-MOVED {SLOT} {MOVED_TO[0]}:{MOVED_TO[1]}\r\n".encode())
                else:
                    writer.write(b"+PONG\r\n" if command == b"PING" else b"+OK\r\n")
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield "127.0.0.1", server.sockets[0].getsockname()[1]


def _pool(node: tuple[str, int]) -> tuple[SlotMaster, ConnectionPool]:
    master = SlotMaster([node], SLOT)
    master.moved(node)  # known already: no CLUSTER SLOTS is asked
    retry = Retry(NoBackoff(), 0)
    return master, ConnectionPool(connection_class=SlotMasterConnection, slot_master=master, retry=retry)


async def test_a_moved_reply_is_heard_and_the_pool_drops_the_connection(moved_node: tuple[str, int]) -> None:
    master, pool = _pool(moved_node)
    try:
        conn = await pool.get_connection()
        await conn.send_command("GET", "{n}key")
        with pytest.raises(rx.MovedError):
            await conn.read_response()
        assert master.master == MOVED_TO, _changed("Connection.read_response raising MovedError")
        assert conn.should_reconnect()
        await pool.release(conn)
        assert not conn.is_connected, _changed("ConnectionPool.release disconnecting should_reconnect()")
    finally:
        await pool.aclose()


async def test_a_subscriber_connection_is_told_apart(moved_node: tuple[str, int]) -> None:
    _, pool = _pool(moved_node)
    client = aioredis.Redis.from_pool(pool)
    try:
        assert await client.set("{n}key", "1")
        pubsub = client.pubsub()
        await pubsub.subscribe("events")
        assert isinstance(pubsub.connection, SlotMasterConnection) and pubsub.connection.subscriber, _changed(
            "PubSub registering a connect callback"
        )
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        conn = await pool.get_connection()
        assert not conn.subscriber, _changed("who calls register_connect_callback (PubSub only)")
        await pool.release(conn)
    finally:
        await client.aclose()
