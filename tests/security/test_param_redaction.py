"""Secrets and personal data in call parameters leave the caller's process redacted.

Two runtimes on a real nats-server: the caller's calls, its agents' calls and its
notifications reach a sink in the other runtime, which records the parameters it got.
An agent's calls are redacted by default (off per agent, per runtime and per call); a call
from outside any agent sends the user's own parameters unless it asks. Redaction keeps the
parameters' schema, never marks twice, and counts what it hid on the ``a2a.redactions`` metric.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from a2a import Agent, Context, Runtime, Settings
from a2a.observability.telemetry import Telemetry

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.security]

EMAIL = "jane.doe@example.com"
API_KEY = "sk-proj-Xk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef"
PARAMS = {
    "to": EMAIL,
    "note": f"use key {API_KEY} for the export",
    "port": 5432,
    "nested": [{"key": API_KEY}],
}
REDACTED = {
    "to": "[EMAIL]",
    "note": "use key [API_KEY] for the export",
    "port": 5432,
    "nested": [{"key": "[API_KEY]"}],
}
SCHEMA = {
    "type": "object",
    "required": ["to", "note", "port"],
    "properties": {"to": {"type": "string"}, "note": {"type": "string"}, "port": {"type": "integer"}},
}

sink = Agent("sink")
received: list[dict[str, Any]] = []


@sink.action("take", input_schema=SCHEMA)
async def _take(ctx: Context, params: dict[str, Any]) -> str:
    received.append(params)
    return "ok"


@sink.on("exported")
async def _exported(ctx: Context, params: dict[str, Any]) -> None:
    received.append(params)


relay = Agent("relay")
relay_clear = Agent("relay_clear", redact_params=False)


@relay.action("forward")
@relay_clear.action("forward")
async def _forward(ctx: Context, params: dict[str, Any]) -> Any:
    return await ctx.call("sink", "take", params["payload"])


@relay.action("announce")
async def _announce(ctx: Context, params: dict[str, Any]) -> Any:
    await ctx.notify("exported", params)
    return "ok"


@pytest.fixture
async def callee(settings: Settings) -> AsyncIterator[Runtime]:
    received.clear()
    async with Runtime(settings) as rt:
        await rt.serve(sink)
        yield rt


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
async def caller(settings: Settings, callee: Runtime, reader: InMemoryMetricReader) -> AsyncIterator[Runtime]:
    telemetry = Telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    async with Runtime(settings, telemetry=telemetry) as rt:
        await rt.serve(relay, relay_clear)
        await rt.wait_for_agents(["sink", "relay", "relay_clear"], timeout=10)
        yield rt


def redactions(reader: InMemoryMetricReader) -> dict[tuple[str, str], int]:
    """The ``a2a.redactions`` counter, by (agent, kind)."""
    counts: dict[tuple[str, str], int] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "a2a.redactions":
                    for point in metric.data.data_points:
                        a = point.attributes or {}
                        counts[(str(a["a2a.agent"]), str(a["a2a.redaction.kind"]))] = int(point.value)
    return counts


async def test_a_call_from_outside_sends_the_users_own_parameters_unless_it_asks(
    caller: Runtime, reader: InMemoryMetricReader
) -> None:
    assert await caller.call("sink", "take", PARAMS) == "ok"
    assert await caller.call("sink", "take", PARAMS, redact_params=True) == "ok"
    assert received == [PARAMS, REDACTED]
    client = caller.settings.client_name
    assert redactions(reader) == {(client, "email"): 1, (client, "api_key"): 2}
    assert PARAMS["to"] == EMAIL  # the caller's own dict is left as it was


async def test_an_agents_calls_are_redacted_unless_it_turned_that_off(
    caller: Runtime, reader: InMemoryMetricReader
) -> None:
    await caller.call("relay", "forward", {"payload": PARAMS}, redact_params=False)
    await caller.call("relay_clear", "forward", {"payload": PARAMS}, redact_params=False)
    assert received == [REDACTED, PARAMS]
    assert redactions(reader) == {("relay", "email"): 1, ("relay", "api_key"): 2}


async def test_redacted_parameters_are_not_marked_or_counted_again(
    caller: Runtime, reader: InMemoryMetricReader
) -> None:
    """The client's call redacts; the relay forwards what it got, already redacted."""
    await caller.call("relay", "forward", {"payload": PARAMS}, redact_params=True)
    assert received == [REDACTED]
    client = caller.settings.client_name
    assert redactions(reader) == {(client, "email"): 1, (client, "api_key"): 2}


async def test_the_runtime_setting_and_a_calls_own_choice(settings: Settings, callee: Runtime) -> None:
    clear = msgspec.structs.replace(settings, redact_params=False)
    async with Runtime(clear) as rt:
        await rt.serve(relay)
        await rt.wait_for_agents(["sink", "relay"], timeout=10)
        await rt.call("relay", "forward", {"payload": PARAMS})
        await rt.call("sink", "take", PARAMS, redact_params=True)
    assert received == [PARAMS, REDACTED]


async def test_an_agents_notifications_are_redacted(caller: Runtime) -> None:
    await caller.call("relay", "announce", {"by": EMAIL})
    with anyio.fail_after(5):
        while not received:
            await anyio.sleep(0.02)
    assert received == [{"by": "[EMAIL]"}]
