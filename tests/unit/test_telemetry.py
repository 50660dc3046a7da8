"""Tracing on the in-memory transport: headers, span content, payload redaction, and off means off."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from a2a import Agent, Context, Runtime, Settings
from a2a.observability.telemetry import Telemetry
from transports import MemoryBroker

pytestmark = pytest.mark.anyio

echo = Agent("echo")


@echo.action("echo")
async def _echo(ctx: Context, params: dict[str, Any]) -> Any:
    return params


def test_off_unless_the_environment_says_so() -> None:
    off = Telemetry.from_env("x", env={})
    assert not off.tracing and not off.metrics
    assert not Telemetry.from_env(
        "x", env={"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}
    ).tracing
    assert not Telemetry.from_env(
        "x", env={"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
    ).tracing
    on = Telemetry.from_env("x", env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert on.tracing and on.metrics


async def _run(broker: MemoryBroker, telemetry: Telemetry, seen: list[Any]) -> Any:
    """Call echo through a tapped broker; return the result, recording each request's headers."""
    tap = broker.connect()

    async def record(msg: Any) -> None:
        seen.append(msg.headers)

    await tap.subscribe("a2a.default.agent.>", record)
    settings = Settings(redis_url=None)
    async with (
        Runtime(settings, transport=broker.connect()) as server,
        Runtime(settings, transport=broker.connect(), telemetry=telemetry) as client,
    ):
        await server.serve(echo)
        return await client.call("echo", "echo", {"mail": "jane.doe@example.com"})


async def test_tracing_off_sends_no_trace_headers() -> None:
    seen: list[Any] = []
    async with MemoryBroker() as broker:
        await _run(broker, Telemetry(), seen)
    assert seen == [None]


async def test_tracing_on_propagates_w3c_context_and_redacts_opt_in_payloads() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: list[Any] = []
    async with MemoryBroker() as broker:
        await _run(broker, Telemetry(provider, payloads=True), seen)
    (headers,) = seen
    assert headers is not None and headers["traceparent"].startswith("00-")
    (span,) = exporter.get_finished_spans()
    assert span.name == "send echo.echo"
    assert headers["traceparent"].split("-")[2] == format(span.context.span_id, "016x")
    assert span.attributes["a2a.parameters"] == '{"mail":"[EMAIL]"}'
    assert span.attributes["a2a.result"] == '{"mail":"[EMAIL]"}'


leaky = Agent("leaky")


@leaky.action("connect")
async def _connect(ctx: Context, params: dict[str, Any]) -> Any:
    raise RuntimeError("cannot reach redis://:hunter2@cache:6379")


async def test_error_descriptions_and_payloads_are_redacted_by_pattern_and_key_name() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    params = {"credentials": {"user": "bob", "value": "nested-pw"}, "note": "Authorization: Basic dXNlcjpw"}
    async with MemoryBroker() as broker:
        settings = Settings(redis_url=None)
        async with (
            Runtime(settings, transport=broker.connect()) as server,
            Runtime(
                settings, transport=broker.connect(), telemetry=Telemetry(provider, payloads=True)
            ) as client,
        ):
            await server.serve(leaky)
            with pytest.raises(Exception, match="AGENT_ERROR"):
                await client.call("leaky", "connect", params)
    (span,) = exporter.get_finished_spans()
    assert span.status.description == "AGENT_ERROR: cannot reach redis://:[SECRET]@cache:6379"
    attributes = span.attributes or {}
    assert attributes["a2a.parameters"] == '{"credentials":"[SECRET]","note":"Authorization: Basic [SECRET]"}'
    assert not span.events
