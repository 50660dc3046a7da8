"""pytest fixtures for testing agents: ``pytest_plugins = ["a2a.testing.pytest_plugin"]``.

    a2a_broker    a :class:`a2a.testing.TestBroker` for the test
    a2a_runtime   a factory: ``rt = await a2a_runtime(*agents, **settings)`` returns a
                  running runtime on that broker (serving ``agents``); all are closed
                  when the test ends

The fixtures are async: mark tests with ``pytest.mark.anyio`` (anyio's pytest plugin),
and use the asyncio backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from ..core.agent import Agent
from ..core.runtime import Runtime
from . import TestBroker

__all__ = ["RuntimeFactory", "a2a_broker", "a2a_runtime"]

RuntimeFactory = Callable[..., Awaitable[Runtime]]


@pytest.fixture
async def a2a_broker() -> AsyncIterator[TestBroker]:
    async with TestBroker() as broker:
        yield broker


@pytest.fixture
async def a2a_runtime(a2a_broker: TestBroker) -> AsyncIterator[RuntimeFactory]:
    async with AsyncExitStack() as stack:

        async def make(*agents: Agent, **settings: Any) -> Runtime:
            return await stack.enter_async_context(a2a_broker.runtime(*agents, **settings))

        yield make
