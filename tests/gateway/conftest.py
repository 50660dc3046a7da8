"""A gateway in the test process, over a runtime that serves the test agents on real servers.

Besides the ``gateway`` fixture, the helpers here start more runtimes and gateways (replicas,
authenticated gateways), speak both HTTP bindings and read SSE streams.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import httpx
import pytest

from a2a import Agent, Runtime, Settings
from a2a.gateway import Authenticator, CardSigner, GatewayConfig, serve_gateway

from .agents import chain, echo, front, slow

V1 = {"A2A-Version": "1.0"}
TERMINAL = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
AGENTS: tuple[Agent, ...] = (echo, slow, front, chain)


def message(*parts: dict[str, Any], text: str = "hi", **fields: Any) -> dict[str, Any]:
    """A 1.0 user message (a text part unless ``parts`` are given)."""
    return {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": list(parts) or [{"text": text}],
        **fields,
    }


def action(name: str, **params: Any) -> dict[str, Any]:
    """A data part that names an action and its parameters."""
    return {"data": {"action": name, "params": params}}


def rpc_body(method: str, params: Any, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def base(agent: str | None) -> str:
    """The interface URL path of an agent, or of the gateway itself."""
    return f"/agents/{agent}" if agent else ""


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
    """(event type, decoded data) of each event of an SSE response, as the W3C rules read it."""
    event, data = "message", list[str]()
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event, json.loads("\n".join(data))


def state_of(event: Mapping[str, Any]) -> str | None:
    """The task state a 1.0 stream event carries, if any."""
    if "task" in event:
        return str(event["task"]["status"]["state"])
    if "statusUpdate" in event:
        return str(event["statusUpdate"]["status"]["state"])
    return None


@dataclass
class Gateway:
    url: str
    runtime: Runtime
    client: httpx.AsyncClient

    async def rpc(
        self,
        method: str,
        params: Any,
        *,
        agent: str | None = None,
        headers: Mapping[str, str] | None = None,
        request_id: Any = 1,
    ) -> dict[str, Any]:
        """The JSON-RPC response body of one call (always HTTP 200 with JSON)."""
        r = await self.client.post(
            base(agent) or "/",
            json=rpc_body(method, params, request_id),
            headers=V1 if headers is None else headers,
        )
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/json"), r.headers
        body: dict[str, Any] = r.json()
        return body

    async def send(
        self,
        msg: dict[str, Any],
        *,
        agent: str | None = None,
        headers: Mapping[str, str] | None = None,
        **request: Any,
    ) -> dict[str, Any]:
        """The task a REST ``message:send`` answers with."""
        r = await self.client.post(
            f"{base(agent)}/message:send", json={"message": msg, **request}, headers={**V1, **(headers or {})}
        )
        assert r.status_code == 200, r.text
        task: dict[str, Any] = r.json()["task"]
        return task

    async def get_task(
        self, task_id: str, *, headers: Mapping[str, str] | None = None, **query: Any
    ) -> httpx.Response:
        return await self.client.get(f"/tasks/{task_id}", params=query, headers={**V1, **(headers or {})})

    async def task(self, task_id: str, *, headers: Mapping[str, str] | None = None, **query: Any) -> Any:
        r = await self.get_task(task_id, headers=headers, **query)
        assert r.status_code == 200, r.text
        return r.json()

    async def list_tasks(self, *, headers: Mapping[str, str] | None = None, **query: Any) -> Any:
        r = await self.client.get("/tasks", params=query, headers={**V1, **(headers or {})})
        assert r.status_code == 200, r.text
        return r.json()

    async def wait_state(
        self,
        task_id: str,
        states: Iterable[str] = TERMINAL,
        *,
        timeout: float = 5.0,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The task once its state is one of ``states`` (polled)."""
        wanted = set(states)
        with anyio.fail_after(timeout):
            while True:
                task = await self.task(task_id, headers=headers)
                if task["status"]["state"] in wanted:
                    return task
                await anyio.sleep(0.02)

    async def healthy(self) -> None:
        """The gateway still answers: its health, and a real call through it."""
        with anyio.fail_after(5):
            assert (await self.client.get("/healthz")).status_code == 200
            task = await self.send(message(text="still here"), agent="echo")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task


@asynccontextmanager
async def runtime_serving(
    settings: Settings, *agents: Agent, wait_for: Iterable[str] = ()
) -> AsyncIterator[Runtime]:
    """A runtime hosting ``agents``, once its view also sees the agents named in ``wait_for``."""
    async with Runtime(settings) as runtime:
        if agents:
            await runtime.serve(*agents)
        names = [a.name for a in agents] + [n for n in wait_for if n not in {a.name for a in agents}]
        if names:
            await runtime.wait_for_agents(names)
        yield runtime


@asynccontextmanager
async def gateway_on(
    runtime: Runtime,
    *,
    auth: Authenticator | None = None,
    config: GatewayConfig | None = None,
    card_signer: CardSigner | None = None,
) -> AsyncIterator[Gateway]:
    """A gateway over ``runtime`` on a free port, stopped on exit."""
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            partial(
                serve_gateway,
                runtime,
                port=0,
                config=config or GatewayConfig(default_timeout=10),
                auth=auth or Authenticator(),
                card_signer=card_signer,
            )
        )
        url = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient(base_url=url, timeout=20) as client:
                yield Gateway(url, runtime, client)
        finally:
            tg.cancel_scope.cancel()


@pytest.fixture
async def gateway(settings: Settings) -> AsyncIterator[Gateway]:
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime) as gw:
        yield gw
