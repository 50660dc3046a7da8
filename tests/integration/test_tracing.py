"""Traces and metrics exported over OTLP by agents in separate processes, received by the test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.errors import NoResponders
from a2a.observability.telemetry import Telemetry
from tests.helpers import AgentProcess
from tests.otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

PRODUCER, CONSUMER = 4, 5  # OTLP span kinds
STATUS_ERROR = 2


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    yield r
    r.stop()


def otel_env(receiver: OtlpReceiver, service: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": service,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "300",
    }


def by_name(spans: list[ReceivedSpan], service: str, name: str) -> ReceivedSpan:
    matches = [s for s in spans if s.service == service and s.name == name]
    assert len(matches) == 1, (service, name, [(s.service, s.name) for s in spans])
    return matches[0]


async def test_one_request_is_one_trace_whose_tree_follows_the_delegation_across_processes(
    settings: Settings, receiver: OtlpReceiver
) -> None:
    chain = {"target": "hop_b", "action": "forward", "params": {"target": "hop_c", "action": "whoami"}}
    with (
        AgentProcess(settings, "tests.delegates:hop_a", **otel_env(receiver, "svc-a")),
        AgentProcess(settings, "tests.delegates:hop_b", **otel_env(receiver, "svc-b")),
        AgentProcess(settings, "tests.delegates:hop_c", **otel_env(receiver, "svc-c")),
    ):
        telemetry = Telemetry.from_env("client", env=otel_env(receiver, "client"))
        assert telemetry.tracing and telemetry.metrics
        async with Runtime(settings, telemetry=telemetry) as rt:
            await rt.wait_for_agents(["hop_a", "hop_b", "hop_c"], timeout=30)
            out = await rt.call("hop_a", "forward", chain)
            assert out["result"]["result"]["agent"] == "hop_c"
        wanted = {"a2a.calls", "a2a.call.duration", "a2a.handled", "a2a.handle.duration", "a2a.inflight"}
        with anyio.fail_after(15):
            while (
                len({s.service for s in receiver.snapshot()}) < 4
                or not wanted <= set(receiver.metrics)
                or not receiver.metrics["a2a.handled"] >= {"svc-a", "svc-b", "svc-c"}
            ):
                await anyio.sleep(0.1)
    spans = receiver.snapshot()
    root = by_name(spans, "client", "send hop_a.forward")
    process_a = by_name(spans, "svc-a", "process hop_a.forward")
    send_b = by_name(spans, "svc-a", "send hop_b.forward")
    process_b = by_name(spans, "svc-b", "process hop_b.forward")
    send_c = by_name(spans, "svc-b", "send hop_c.whoami")
    process_c = by_name(spans, "svc-c", "process hop_c.whoami")
    tree = [root, process_a, send_b, process_b, send_c, process_c]
    assert len({s.trace_id for s in tree}) == 1
    assert root.parent_span_id == ""
    for parent, child in itertools.pairwise(tree):
        assert child.parent_span_id == parent.span_id, (parent.name, child.name)
    assert [s.kind for s in tree] == [PRODUCER, CONSUMER] * 3
    for send, process, hop, depth in (
        (root, process_a, 1, 0),
        (send_b, process_b, 2, 1),
        (send_c, process_c, 3, 2),
    ):
        assert send.attributes["a2a.correlation_id"] == process.attributes["a2a.correlation_id"]
        assert process.attributes["a2a.hop_count"] == hop and process.attributes["a2a.depth"] == depth
        assert send.attributes["messaging.system"] == process.attributes["messaging.system"] == "nats"
        assert send.attributes["messaging.operation"] == "publish"
        assert process.attributes["messaging.operation"] == "process"
        assert f".agent.{process.attributes['a2a.target']}." in send.attributes["messaging.destination.name"]
    assert process_b.attributes["a2a.source"] == "hop_a" and process_b.attributes["a2a.target"] == "hop_b"
    assert all("a2a.parameters" not in s.attributes and "a2a.result" not in s.attributes for s in spans)
    assert receiver.metrics["a2a.handled"] >= {"svc-a", "svc-b", "svc-c"}


async def test_failed_calls_are_error_spans_with_the_code(settings: Settings, receiver: OtlpReceiver) -> None:
    telemetry = Telemetry.from_env("client", env=otel_env(receiver, "client"))
    async with Runtime(Settings(**{**_fields(settings), "redis_url": None}), telemetry=telemetry) as rt:
        with pytest.raises(NoResponders):
            await rt.call("nobody", "x")
    with anyio.fail_after(5):
        while not receiver.snapshot():
            await anyio.sleep(0.05)
    (span,) = receiver.snapshot()
    assert span.status_code == STATUS_ERROR and span.attributes["a2a.error_code"] == "NO_RESPONDERS"


def _fields(settings: Settings) -> dict[str, Any]:
    return {f: getattr(settings, f) for f in settings.__struct_fields__}
