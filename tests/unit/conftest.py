"""Unit tests run on the in-memory broker of ``a2a.testing``, as users test their own agents."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from a2a.testing import TestBroker
from a2a.testing.pytest_plugin import RuntimeFactory, a2a_runtime

__all__ = ["MakeRuntime", "a2a_runtime"]

MakeRuntime = RuntimeFactory


@pytest.fixture
async def a2a_broker() -> AsyncIterator[TestBroker]:
    """A broker with a 64 KiB message limit, so payload-limit tests stay small."""
    async with TestBroker(max_payload=64 * 1024) as b:
        yield b


@pytest.fixture
def broker(a2a_broker: TestBroker) -> TestBroker:
    return a2a_broker


@pytest.fixture
def make_runtime(a2a_runtime: RuntimeFactory) -> RuntimeFactory:
    """Runtimes on the in-memory broker (and its in-memory registry); all closed at the end."""
    return a2a_runtime
