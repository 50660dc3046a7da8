"""Testing your agents without servers: an in-memory broker with NATS semantics, and ready runtimes.

The broker is the one this project's own unit tests run on. Delivery follows
nats-server: the runtime's own codec parses every message, subjects match with the
same wildcard matcher, each message goes to one member per queue group, a request
nobody listens to gets "no responders" at once, messages over ``max_payload`` are
refused, and timeouts are real. Every subscription is served by its own task, never
inside the publisher's::

    from a2a import by_capability
    from a2a.testing import TestBroker

    async def test_reader_reads() -> None:
        async with TestBroker() as broker, broker.runtime(reader) as rt:
            assert await rt.call("reader", "read", {"path": "app.py"}) == {"text": "..."}

    async def test_edits_go_to_the_coder() -> None:  # coder offers the capability "code.edit"
        async with TestBroker() as broker, broker.runtime(coder), broker.runtime() as rt:
            assert await rt.call(by_capability("code.edit"), "edit", {"text": "x"}) == {"text": "y"}

The broker keeps a capability registry too (``discovery.MemoryRegistry``), which its
runtimes share as they would Redis: an agent served by one runtime is found by capability
from another, and routing chooses as in production (match score times trust, never under
the caller's ``trust_floor``; busy instances last, ties to the less loaded). Busy status and
load follow the hosts; an instance goes when its runtime closes or, as a process that died,
when its heartbeats stop (three heartbeat intervals later). A runtime that starts serving
while another runs is seen by the other a moment later: ``await rt.wait_for_agents([...])``
waits for it. History, facts and sessions need Redis: none is kept.

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

from discovery import MemoryRegistryServer
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
        self.registry = MemoryRegistryServer()
        """The capability registry every runtime of this broker shares (per namespace);
        ``broker.registry.connect()`` is a client of it, as a runtime's ``rt.registry`` is."""

    @asynccontextmanager
    async def runtime(self, *agents: Agent, **settings: Any) -> AsyncIterator[Runtime]:
        """A runtime connected to this broker, serving ``agents``; closed on exit.

        ``settings`` are :class:`a2a.Settings` fields (``namespace``, ``max_hops``,
        ``default_timeout``, ...) or the runtime's keyword arguments (``policy``,
        ``redactor``, ``context_builder``, ``telemetry``, ``registry``, ``durable``). Without a
        ``redis_url`` or ``registry`` its registry is a client of :attr:`registry` (with the
        settings' ``namespace``, ``heartbeat_interval`` and ``trust_floor``); ``registry=None``
        makes one without, which routes by name only. Without a roster it is open
        (``open=True``): every agent may call every other.
        """
        options = {k: settings.pop(k) for k in _RUNTIME_OPTIONS if k in settings}
        options.setdefault("durable", self.durable)
        settings.setdefault("redis_url", None)
        settings.setdefault("open", True)  # without a roster, agents call each other (as in development)
        config = Settings(**settings)
        if "registry" not in options and not config.redis_url:
            options["registry"] = self.registry.connect(
                namespace=config.namespace,
                heartbeat_interval=config.heartbeat_interval,
                trust_floor=config.trust_floor,
            )
        async with Runtime(config, transport=self.connect(), **options) as rt:
            if agents:
                await rt.serve(*agents)
            yield rt


_RUNTIME_OPTIONS = ("registry", "policy", "redactor", "context_builder", "telemetry", "durable")
