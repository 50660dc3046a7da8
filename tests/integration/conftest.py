"""Fixtures shared by integration tests: a cluster of delegation test agents in three processes,
and a registry of the test's own namespace."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from a2a import Runtime, Settings
from discovery import Registry
from tests.helpers import ROOT, AgentProcess

ROSTER = str(ROOT / "tests" / "roster.yaml")
GROUPS = (
    ("tests.delegates:hop_a", "tests.delegates:shallow", "tests.delegates:mute", "tests.delegates:picky"),
    ("tests.delegates:hop_b", "tests.delegates:reader_only"),
    ("tests.delegates:hop_c", "tests.delegates:hop_d"),
)
REGISTRY_INTERVAL = 0.2
"""Heartbeat interval of the ``registry`` fixture."""
AGENTS = ["hop_a", "shallow", "mute", "picky", "hop_b", "reader_only", "hop_c", "hop_d"]


@pytest.fixture
async def registry(redis_url: str, namespace: str) -> AsyncIterator[Registry]:
    """A registry of the test's own namespace, heartbeats every REGISTRY_INTERVAL seconds."""
    reg = Registry.from_url(redis_url, namespace=namespace, heartbeat_interval=REGISTRY_INTERVAL)
    yield reg
    await reg.aclose()


@pytest.fixture(scope="session")
def cluster(nats_url: str, redis_url: str) -> Iterator[Settings]:
    settings = Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace="deleg" + uuid.uuid4().hex[:8],
        heartbeat_interval=0.5,
        default_timeout=10.0,
        roster=ROSTER,
    )
    procs = [AgentProcess(settings, *group, A2A_ROSTER=ROSTER).start() for group in GROUPS]
    try:
        yield settings
    finally:
        for proc in procs:
            proc.terminate()
            proc.__exit__(None, None, None)


@pytest.fixture
async def rt(cluster: Settings) -> AsyncIterator[Runtime]:
    async with Runtime(cluster) as runtime:
        await runtime.wait_for_agents(AGENTS, timeout=30)
        yield runtime
