"""The official SDK's client against the gateway: bus agents served over A2A 1.0 and 0.3.

The gateway and the bus agents run in this process on real nats-server and Redis; the
SDK client runs in its own virtual environment (it installs a top-level ``a2a`` of its
own) and is driven as a subprocess from a worker thread, so the event loop keeps serving.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from a2a import Runtime, Settings, Telemetry
from a2a.gateway import Authenticator, GatewayConfig, serve_gateway
from tests.gateway import agents
from tests.interop.conftest import SdkOutput, run_sdk_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

COMPLETED = "TASK_STATE_COMPLETED"
CANCELED = "TASK_STATE_CANCELED"
COMBOS = [
    pytest.param("jsonrpc", "1.0", id="jsonrpc-1.0"),
    pytest.param("rest", "1.0", id="rest-1.0"),
    pytest.param("jsonrpc", "0.3", id="jsonrpc-0.3"),
]


@asynccontextmanager
async def gateway(
    settings: Settings, *, auth: Authenticator | None = None, telemetry: Telemetry | None = None
) -> AsyncIterator[str]:
    async with Runtime(settings, telemetry=telemetry) as runtime, anyio.create_task_group() as tg:
        await runtime.serve(agents.echo, agents.slow, agents.front)
        await runtime.wait_for_agents(["echo", "slow", "front"])
        port = await tg.start(
            lambda task_status: serve_gateway(
                runtime,
                port=0,
                config=GatewayConfig(default_timeout=20),
                auth=auth or Authenticator(),
                task_status=task_status,
            )
        )
        yield f"http://127.0.0.1:{port}"
        tg.cancel_scope.cancel()


@pytest.fixture
def sdk(sdk_python: Path) -> Callable[..., Any]:
    async def run(*args: str, timeout: float = 60) -> SdkOutput:
        return await anyio.to_thread.run_sync(lambda: run_sdk_client(sdk_python, *args, timeout=timeout))

    return run


def text_of(task: dict[str, Any]) -> list[Any]:
    return [p.get("text", p.get("data")) for a in task.get("artifacts", []) for p in a["parts"]]


@pytest.mark.parametrize(("binding", "version"), COMBOS)
async def test_send_reaches_the_bus_agent(settings: Settings, sdk: Any, binding: str, version: str) -> None:
    async with gateway(settings) as url:
        out = (await sdk("--url", f"{url}/agents/echo", "--binding", binding, "--version", version,
                         "send", "hello café")).ok()  # fmt: skip
        task = out.last("task")
        assert task["status"]["state"] == COMPLETED
        assert text_of(task) == ["hello café"]
        chosen = await sdk("--url", f"{url}/agents/echo", "--binding", binding, "--version", version, "card")
        assert chosen.ok().last("interface")["protocolVersion"] == version
        # The same task, read back through the same binding.
        got = (await sdk("--url", f"{url}/agents/echo", "--binding", binding, "--version", version,
                         "get", task["id"])).ok()  # fmt: skip
        assert got.last("task")["status"]["state"] == COMPLETED
        assert got.last("task")["id"] == task["id"]


@pytest.mark.parametrize(("binding", "version"), COMBOS)
async def test_stream_reports_progress_then_the_result(
    settings: Settings, sdk: Any, binding: str, version: str
) -> None:
    async with gateway(settings) as url:
        out = (await sdk("--url", f"{url}/agents/front", "--binding", binding, "--version", version,
                         "stream", "relay me")).ok()  # fmt: skip
        kinds = [line["event"] for line in out if line.get("op") == "stream"]
        assert kinds[0] == "task"
        assert "artifact-update" in kinds
        assert kinds[-1] == "status-update"
        final = out.events("status-update")[-1]
        assert final["status"]["state"] == COMPLETED
        artifact = out.last("artifact-update")["artifact"]
        assert artifact["parts"][0]["data"] == {"relayed": "relay me"}


async def test_a_data_part_names_the_action_and_its_parameters(settings: Settings, sdk: Any) -> None:
    async with gateway(settings) as url:
        data = json.dumps({"action": "whoami", "params": {}})
        out = (await sdk("--url", f"{url}/agents/slow", "send-data", data)).ok()
        task = out.last("task")
        assert task["status"]["state"] == COMPLETED
        (result,) = text_of(task)
        assert result["user"] is None  # an open gateway acts for nobody in particular
        assert result["conversation"].endswith("-" + task["contextId"])  # scoped to its owner


async def test_a_skill_on_the_gateway_card_routes_by_capability(settings: Settings, sdk: Any) -> None:
    async with gateway(settings) as url:
        card = (await sdk("--url", url, "card")).ok().last("card")
        assert {"echoing", "waiting", "fronting"} <= {s["id"] for s in card["skills"]}
        out = (await sdk("--url", url, "--skill", "echoing", "send", "by skill")).ok()
        task = out.last("task")
        assert task["status"]["state"] == COMPLETED
        assert text_of(task) == ["by skill"]
        assert task["metadata"]["agent"] == "echo"


@pytest.mark.parametrize(("binding", "version"), COMBOS)
async def test_cancel_task_reaches_the_slow_bus_handler(
    settings: Settings, sdk: Any, binding: str, version: str
) -> None:
    agents.CANCELLED.clear()
    async with gateway(settings) as url:
        out = (await sdk("--url", f"{url}/agents/slow", "--binding", binding, "--version", version,
                         "send-then-cancel", "wait please", "--after", "1.0")).ok()  # fmt: skip
        assert out.last("task", op="cancel")["status"]["state"] == CANCELED
        assert out.last("task", op="get")["status"]["state"] == CANCELED
        with anyio.fail_after(5):
            while not agents.CANCELLED:
                await anyio.sleep(0.05)


async def test_authentication(settings: Settings, sdk: Any, tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    keys.write_text("alice: key-of-alice\nbob: [key-of-bob]\n")
    async with gateway(settings, auth=Authenticator.from_files(keys)) as url:
        card = (await sdk("--url", url, "card")).ok().last("card")
        assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"] == "X-API-Key"
        refused = await sdk("--url", f"{url}/agents/echo", "send", "no key")
        assert refused.returncode == 1 and refused.error is not None
        assert refused.error["httpStatus"] == 401
        wrong = await sdk("--url", f"{url}/agents/echo", "--header", "X-API-Key: guess", "send", "x")
        assert wrong.error is not None and wrong.error["httpStatus"] == 401
        data = json.dumps({"action": "whoami", "params": {}})
        alice = (await sdk("--url", f"{url}/agents/slow", "--header", "X-API-Key: key-of-alice",
                           "send-data", data)).ok()  # fmt: skip
        task = alice.last("task")
        assert text_of(task)[0]["user"] == "alice"
        # Bob cannot read Alice's task: it does not exist for him.
        peek = await sdk(
            "--url", f"{url}/agents/slow", "--header", "X-API-Key: key-of-bob", "get", task["id"]
        )
        assert peek.error is not None and peek.error["type"] == "TaskNotFoundError"


async def test_one_trace_from_the_http_client_to_the_deepest_agent(settings: Settings, sdk: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    traceparent = f"traceparent: 00-{trace_id}-00f067aa0ba902b7-01"
    async with gateway(settings, telemetry=Telemetry(provider)) as url:
        out = (await sdk("--url", f"{url}/agents/front", "--header", traceparent, "send", "traced")).ok()
        assert out.last("task")["status"]["state"] == COMPLETED
    spans = [s for s in exporter.get_finished_spans() if f"{s.context.trace_id:032x}" == trace_id]
    names = {s.name for s in spans}
    assert any(n.startswith("A2A SendMessage") for n in names), names
    assert "process front.relay" in names and "process echo.say" in names, names
