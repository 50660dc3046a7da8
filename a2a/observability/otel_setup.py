"""OpenTelemetry providers as the standard ``OTEL_*`` variables configure them."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import metrics, trace
from opentelemetry.sdk.resources import Resource

__all__ = ["ENVIRONMENT", "TRUE", "exporter_wanted", "meter_provider", "tracer_provider"]

# The variables read here (exporters read further OTEL_EXPORTER_OTLP_* ones themselves).
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

TRUE = {"1", "true", "yes", "on"}


def exporter_wanted(env: Mapping[str, str], signal: str) -> str | None:
    """Which exporter a signal ("traces"/"metrics") should use, or None when it is off."""
    if env.get("OTEL_SDK_DISABLED", "").lower() in TRUE:
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


def tracer_provider(kind: str, resource: Resource, env: Mapping[str, str]) -> trace.TracerProvider:
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


def meter_provider(kind: str, resource: Resource, env: Mapping[str, str]) -> metrics.MeterProvider:
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
