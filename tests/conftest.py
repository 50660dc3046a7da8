"""Fixtures: real nats-server and Redis processes on free ports, one per test session.

Set A2A_TEST_NATS_URL / A2A_TEST_REDIS_URL to use running servers instead. Tests that
kill or restart a server always start their own.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from a2a import Settings
from a2a.dev.servers import NatsServer, RedisServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def nats_url() -> Iterator[str]:
    url = os.environ.get("A2A_TEST_NATS_URL")
    if url:
        yield url
        return
    with NatsServer() as server:
        yield server.url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("A2A_TEST_REDIS_URL")
    if url:
        yield url
        return
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def namespace() -> str:
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture
def settings(nats_url: str, redis_url: str, namespace: str) -> Settings:
    return Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace=namespace,
        heartbeat_interval=0.25,
        default_timeout=10.0,
        open=True,
    )
