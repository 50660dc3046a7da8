from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from a2a import Runtime, Settings
from transports import MemoryBroker

MakeRuntime = Callable[..., Awaitable[Runtime]]


@pytest.fixture
async def broker() -> AsyncIterator[MemoryBroker]:
    async with MemoryBroker(max_payload=64 * 1024) as b:
        yield b


@pytest.fixture
async def make_runtime(broker: MemoryBroker) -> AsyncIterator[MakeRuntime]:
    """Runtimes on the in-memory broker, without a registry; all closed at the end."""
    opened: list[Runtime] = []

    async def make(**settings: object) -> Runtime:
        rt = Runtime(Settings(redis_url=None, **settings), transport=broker.connect())  # type: ignore[arg-type]
        await rt.__aenter__()
        opened.append(rt)
        return rt

    yield make
    for rt in reversed(opened):
        await rt.__aexit__(None, None, None)
