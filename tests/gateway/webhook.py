"""A webhook receiver for push-notification tests: a real HTTP server on a port of its own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from a2a.web import bind_socket, serve_app

__all__ = ["Receiver", "receiver"]


@dataclass
class Receiver:
    """A webhook that records what it receives; it listens only inside :meth:`up`."""

    port: int
    got: list[tuple[dict[str, str], bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    @asynccontextmanager
    async def up(self) -> AsyncIterator[None]:
        async def hook(request: Request) -> Response:
            self.got.append(({k.lower(): v for k, v in request.headers.items()}, await request.body()))
            return Response(status_code=204)

        app = Starlette(routes=[Route("/hook", hook, methods=["POST"])])
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_app, app, bind_socket("127.0.0.1", self.port), shutdown_timeout=1))
            yield
            tg.cancel_scope.cancel()

    def events(self) -> dict[str, dict[str, Any]]:
        """Each distinct event received, by event id (a duplicate must be the same event)."""
        found: dict[str, dict[str, Any]] = {}
        for headers, body in self.got:
            event = json.loads(body)
            assert found.setdefault(headers["x-a2a-event-id"], event) == event
        return found

    async def wait_final(self, task_id: str, timeout: float = 15.0) -> dict[str, dict[str, Any]]:
        """The events once the task's final state has arrived, and a moment for stragglers."""
        with anyio.fail_after(timeout):
            while not any(
                e.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
                for e in self.events().values()
            ):
                await anyio.sleep(0.05)
        await anyio.sleep(0.5)
        events = self.events()
        assert all(i.startswith(f"{task_id}:") for i in events), events.keys()
        return events


@pytest.fixture
def receiver() -> Receiver:
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    return Receiver(port)
