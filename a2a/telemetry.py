"""OpenTelemetry tracing and metrics for A2A calls; nothing happens unless it is switched on.

Switched on by the standard variables: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the
``..._TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT`` variants), ``OTEL_TRACES_EXPORTER`` /
``OTEL_METRICS_EXPORTER`` (``otlp``, ``console`` or ``none``), ``OTEL_SDK_DISABLED``;
the exporters read the rest (protocol, headers, timeouts) themselves, and
``OTEL_SERVICE_NAME`` names the process. A tracer provider the application installed
itself is used as it is.

W3C trace context travels in NATS message headers: the caller's "send" span (kind
PRODUCER) is the parent of the callee's "process" span (kind CONSUMER), so one user
request is one trace whose span tree follows the delegation tree across processes.
Payloads stay out of spans unless ``A2A_TRACE_PAYLOADS=true``, and then only redacted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec
from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from bus.errors import A2AError
from bus.wire import Envelope

from .redact import Redactor

__all__ = ["ENVIRONMENT", "Telemetry"]

# The variables this module reads (exporters read further OTEL_EXPORTER_OTLP_* ones themselves).
ENVIRONMENT = (
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "A2A_TRACE_PAYLOADS",
)

log = logging.getLogger("a2a.telemetry")

_propagator = TraceContextTextMapPropagator()
_PAYLOAD_LIMIT = 4096
_TRUE = {"1", "true", "yes", "on"}


def _exporter_wanted(env: Mapping[str, str], signal: str) -> str | None:
    """Which exporter a signal ("traces"/"metrics") should use, or None when it is off."""
    if env.get("OTEL_SDK_DISABLED", "").lower() in _TRUE:
        return None
    choice = env.get(f"OTEL_{signal.upper()}_EXPORTER", "").strip().lower()
    if choice:
        return None if choice == "none" else choice.split(",")[0].strip()
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get(
        f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
    )
    return "otlp" if endpoint else None


def _endpoint(env: Mapping[str, str], signal: str, http: bool) -> str | None:
    """The collector URL for one signal, as OTLP exporters derive it from the variables."""
    specific = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if specific:
        return specific
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not base:
        return None
    return f"{base.rstrip('/')}/v1/{signal}" if http else base


def _http(env: Mapping[str, str], signal: str) -> bool:
    protocol = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or env.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    return protocol.strip().lower() != "grpc"


class Telemetry:
    """Spans and metrics for one runtime. ``Telemetry()`` is off; see :meth:`from_env`.

    Args:
        tracer_provider: spans go here (None: tracing off).
        meter_provider: metrics go here (None: metrics off).
        payloads: add redacted parameters and results to spans.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        payloads: bool = False,
        redactor: Redactor | None = None,
        owned: bool = False,
    ) -> None:
        self.tracing = tracer_provider is not None
        self.metrics = meter_provider is not None
        self.payloads = payloads and self.tracing
        self.redactor = redactor or Redactor()
        self._providers = (tracer_provider, meter_provider) if owned else (None, None)
        self._tracer = tracer_provider.get_tracer("a2a") if tracer_provider is not None else None
        self._registry_size: Callable[[], int] | None = None
        if meter_provider is not None:
            meter = meter_provider.get_meter("a2a")
            self._calls = meter.create_counter(
                "a2a.calls", description="Calls made, by target, action and outcome"
            )
            self._handled = meter.create_counter(
                "a2a.handled", description="Requests handled, by agent and outcome"
            )
            self._errors = meter.create_counter(
                "a2a.errors", description="Calls that ended in an error, by code"
            )
            self._call_duration = meter.create_histogram(
                "a2a.call.duration", unit="s", description="Call latency"
            )
            self._handle_duration = meter.create_histogram(
                "a2a.handle.duration", unit="s", description="Handler time"
            )
            self._inflight = meter.create_up_down_counter(
                "a2a.inflight", description="Requests being handled"
            )
            self._missed = meter.create_counter("a2a.heartbeats.missed", description="Heartbeats that failed")
            meter.create_observable_gauge(
                "a2a.registry.instances",
                callbacks=[self._observe_registry],
                description="Live instances in view",
            )

    @classmethod
    def from_env(
        cls, service_name: str, *, env: Mapping[str, str] | None = None, redactor: Redactor | None = None
    ) -> Telemetry:
        """Telemetry as the OTEL_* variables configure it (off when they say nothing)."""
        env = os.environ if env is None else env
        payloads = env.get("A2A_TRACE_PAYLOADS", "").lower() in _TRUE
        current = trace.get_tracer_provider()
        from opentelemetry.sdk.trace import TracerProvider

        if isinstance(current, TracerProvider):  # the application set one up: use it
            return cls(current, metrics.get_meter_provider(), payloads=payloads, redactor=redactor)
        traces, metric = _exporter_wanted(env, "traces"), _exporter_wanted(env, "metrics")
        if traces is None and metric is None:
            return cls(redactor=redactor)
        resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or service_name})
        tracer_provider = _tracer_provider(traces, resource, env) if traces else None
        meter_provider = _meter_provider(metric, resource, env) if metric else None
        return cls(tracer_provider, meter_provider, payloads=payloads, redactor=redactor, owned=True)

    async def aclose(self) -> None:
        """Flush and stop the providers this object created."""
        for provider in self._providers:
            if provider is not None:
                try:
                    provider.shutdown()  # type: ignore[union-attr]
                except Exception as exc:  # an exporter that cannot reach its collector
                    log.warning("telemetry shutdown: %s", exc)

    # -- spans ---------------------------------------------------------------------------

    @contextmanager
    def send_span(self, env: Envelope, target: str) -> Iterator[Span]:
        """The caller's span of one call; headers from :meth:`headers` carry it to the callee."""
        assert self._tracer is not None
        action = env.payload.action
        with self._tracer.start_as_current_span(
            f"send {target}.{action}",
            kind=SpanKind.PRODUCER,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            self._common(span, env, "publish")
            if self.payloads and env.payload.parameters is not None:
                span.set_attribute("a2a.parameters", self._payload(env.payload.parameters))
            yield span

    @contextmanager
    def process_span(
        self, env: Envelope, headers: Mapping[str, str] | None, agent: str, instance: str
    ) -> Iterator[Span]:
        """The callee's span of handling one message, a child of the caller's span."""
        assert self._tracer is not None
        parent = _propagator.extract(dict(headers)) if headers else None
        with self._tracer.start_as_current_span(
            f"process {agent}.{env.payload.action}",
            context=parent,
            kind=SpanKind.CONSUMER,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            self._common(span, env, "process")
            span.set_attribute("a2a.instance", instance)
            yield span

    def headers(self) -> dict[str, str]:
        """W3C trace context of the current span, for a message's headers."""
        carrier: dict[str, str] = {}
        _propagator.inject(carrier)
        return carrier

    def _common(self, span: Span, env: Envelope, operation: str) -> None:
        meta = env.metadata
        target = env.target_agent_id
        span.set_attributes(
            {
                "messaging.system": "nats",
                "messaging.operation": operation,
                "messaging.operation.type": operation,
                "messaging.message.id": env.message_id,
                "messaging.message.conversation_id": meta.correlation_id,
                "a2a.action": env.payload.action,
                "a2a.source": env.source_agent_id,
                "a2a.target": target if isinstance(target, str) else ",".join(target),
                "a2a.hop_count": meta.hop_count,
                "a2a.depth": meta.depth,
                "a2a.correlation_id": meta.correlation_id,
                "a2a.conversation_id": env.conversation_id,
            }
        )

    def destination(self, span: Span, subject: str, target: str, action: str) -> None:
        span.set_attribute("messaging.destination.name", subject)
        span.set_attribute("a2a.target", target)
        span.update_name(f"send {target}.{action}")

    def outcome(self, span: Span, error: A2AError | None, result: Any = None) -> None:
        if error is not None:
            span.set_attribute("a2a.error_code", error.code)
            if error.agent:
                span.set_attribute("a2a.error_agent", error.agent)
            span.set_status(Status(StatusCode.ERROR, f"{error.code}: {self.redactor.redact(error.message)}"))
        elif self.payloads and result is not None:
            span.set_attribute("a2a.result", self._payload(result))

    def _payload(self, value: Any) -> str:
        try:
            text = msgspec.json.encode(value).decode()
        except (TypeError, msgspec.EncodeError):
            text = repr(type(value))
        return self.redactor.redact(text)[:_PAYLOAD_LIMIT]

    # -- metrics -------------------------------------------------------------------------

    def record_call(self, target: str, action: str, outcome: str, code: str | None, seconds: float) -> None:
        attrs = {"a2a.target": target, "a2a.action": action, "a2a.outcome": outcome}
        self._calls.add(1, attrs)
        self._call_duration.record(seconds, attrs)
        if code:
            self._errors.add(1, {"a2a.error_code": code, "a2a.target": target})

    def record_handled(self, agent: str, action: str, outcome: str, code: str | None, seconds: float) -> None:
        attrs = {"a2a.agent": agent, "a2a.action": action, "a2a.outcome": outcome}
        self._handled.add(1, attrs)
        self._handle_duration.record(seconds, attrs)
        if code:
            self._errors.add(1, {"a2a.error_code": code, "a2a.agent": agent})

    def inflight(self, agent: str, delta: int) -> None:
        self._inflight.add(delta, {"a2a.agent": agent})

    def heartbeat_missed(self, instances: int) -> None:
        self._missed.add(instances)

    def watch_registry(self, size: Callable[[], int]) -> None:
        self._registry_size = size

    def _observe_registry(self, options: CallbackOptions) -> Iterator[Observation]:
        if self._registry_size is not None:
            yield Observation(self._registry_size())


def _tracer_provider(kind: str, resource: Resource, env: Mapping[str, str]) -> trace.TracerProvider:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    exporter: SpanExporter
    if kind == "console":
        exporter = ConsoleSpanExporter()
    elif _http(env, "traces"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

        exporter = HttpSpanExporter(endpoint=_endpoint(env, "traces", http=True))
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

        exporter = GrpcSpanExporter(endpoint=_endpoint(env, "traces", http=False))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _meter_provider(kind: str, resource: Resource, env: Mapping[str, str]) -> metrics.MeterProvider:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        MetricExporter,
        PeriodicExportingMetricReader,
    )

    exporter: MetricExporter
    if kind == "console":
        exporter = ConsoleMetricExporter()
    elif _http(env, "metrics"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
            OTLPMetricExporter as HttpMetricExporter,
        )

        exporter = HttpMetricExporter(endpoint=_endpoint(env, "metrics", http=True))
    else:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        exporter = GrpcMetricExporter(endpoint=_endpoint(env, "metrics", http=False))
    interval = env.get("OTEL_METRIC_EXPORT_INTERVAL")
    reader = PeriodicExportingMetricReader(
        exporter, export_interval_millis=float(interval) if interval else None
    )
    return MeterProvider(resource=resource, metric_readers=[reader])
