"""Testing your agents without servers: an in-memory broker with NATS semantics, and ready runtimes.

The broker is the one this project's own unit tests run on. Delivery follows
nats-server: the runtime's own codec parses every message, subjects match with the
same wildcard matcher, each message goes to one member per queue group, a request
nobody listens to gets "no responders" at once, messages over ``max_payload`` are
refused, and timeouts are real. Every subscription is served by its own task, never
inside the publisher's::

    from a2a.testing import TestBroker

    async def test_reader_reads() -> None:
        async with TestBroker() as broker, broker.runtime(reader) as rt:
            assert await rt.call("reader", "read", {"path": "app.py"}) == {"text": "..."}

Durable tasks run here too, on an in-memory store with the same semantics (redelivery
after the broker's ``ack_wait``, first-writer-wins outcomes): ``rt.tasks.submit(...)``;
``await rt.tasks.stop(0, hand_back=False)`` drops a runtime's running attempts as a crash
would, so another runtime gets them again after the ack wait.

With pytest, ``pytest_plugins = ["a2a.testing.pytest_plugin"]`` in your top-level
``conftest.py`` gives the fixtures ``a2a_broker`` and ``a2a_runtime`` (see there).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from transports import MemoryBroker
from transports.durable import MemoryDurable

from ..core.agent import Agent
from ..core.runtime import Runtime
from ..core.settings import Settings

__all__ = ["TestBroker"]


class TestBroker(MemoryBroker):
    """An in-process message server for tests: ``async with TestBroker() as broker``."""

    __test__ = False  # not a pytest test class

    def __init__(self, *, max_payload: int = 1024 * 1024, ack_wait: float = 30.0) -> None:
        super().__init__(max_payload=max_payload)
        self.durable = MemoryDurable(ack_wait=ack_wait)
        """The durable-task store every runtime of this broker shares."""

    @asynccontextmanager
    async def runtime(self, *agents: Agent, **settings: Any) -> AsyncIterator[Runtime]:
        """A runtime connected to this broker, serving ``agents``; closed on exit.

        ``settings`` are :class:`a2a.Settings` fields (``namespace``, ``max_hops``,
        ``default_timeout``, ...) or the runtime's keyword arguments (``policy``,
        ``redactor``, ``context_builder``, ``telemetry``, ``registry``, ``durable``). Without a
        ``redis_url`` or ``registry`` it has no registry: calls route by name. Without a roster
        it is open (``open=True``): every agent may call every other.
        """
        options = {k: settings.pop(k) for k in _RUNTIME_OPTIONS if k in settings}
        options.setdefault("durable", self.durable)
        settings.setdefault("redis_url", None)
        settings.setdefault("open", True)  # without a roster, agents call each other (as in development)
        async with Runtime(Settings(**settings), transport=self.connect(), **options) as rt:
            if agents:
                await rt.serve(*agents)
            yield rt


_RUNTIME_OPTIONS = ("registry", "policy", "redactor", "context_builder", "telemetry", "durable")
