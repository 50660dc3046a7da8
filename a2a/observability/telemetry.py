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
Payloads stay out of spans unless ``A2A_TRACE_PAYLOADS=true``, and then only redacted (by
key name and by pattern); error descriptions on spans are always redacted, and spans never
record exception events (a traceback's text would bypass the redactor).

The call path and hosts hold one :class:`Trace` per call or handled message. With
telemetry off it is a shared no-op object, so the hot path carries no telemetry branches.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import msgspec
from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from bus.errors import A2AError, outcome_of
from bus.wire import Envelope

from ..delegation.redact import Redactor
from .otel_setup import ENVIRONMENT, TRUE, exporter_wanted, meter_provider, tracer_provider

__all__ = ["ENVIRONMENT", "NO_TRACE", "Telemetry", "Trace"]

log = logging.getLogger("a2a.telemetry")

_propagator = TraceContextTextMapPropagator()
_TRACE_HEADERS = frozenset({"traceparent", "tracestate"})
_PAYLOAD_LIMIT = 4096


class Trace:
    """One call's or one handled message's telemetry, started when made. This base does nothing.

    Used without ``with`` on purpose: in a coroutine on the hot path a ``with`` block costs
    several times the calls it makes. The owner calls :meth:`ended` with the outcome and
    :meth:`close` in a ``finally`` (it ends a trace that never got an outcome, as cancelled).
    """

    __slots__ = ()

    def sending(self, subject: str, target: str) -> dict[str, str] | None:
        """The call is about to go to ``target`` on ``subject``: the headers that carry the trace."""
        return None

    def ended(self, error: A2AError | None, result: Any = None) -> None:
        """The call or handling ended with ``result`` or ``error``."""

    def close(self) -> None:
        """Finish the trace (idempotent)."""


NO_TRACE = Trace()


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
            self._redactions = meter.create_counter(
                "a2a.redactions", description="Secrets and personal data hidden from sent parameters, by kind"
            )
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
        payloads = env.get("A2A_TRACE_PAYLOADS", "").lower() in TRUE
        current = trace.get_tracer_provider()
        from opentelemetry.sdk.trace import TracerProvider

        if isinstance(current, TracerProvider):  # the application set one up: use it
            return cls(current, metrics.get_meter_provider(), payloads=payloads, redactor=redactor)
        traces, metric = exporter_wanted(env, "traces"), exporter_wanted(env, "metrics")
        if traces is None and metric is None:
            return cls(redactor=redactor)
        resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or service_name})
        tracers = tracer_provider(traces, resource, env) if traces else None
        meters = meter_provider(metric, resource, env) if metric else None
        return cls(tracers, meters, payloads=payloads, redactor=redactor, owned=True)

    async def aclose(self) -> None:
        """Flush and stop the providers this object created."""
        for provider in self._providers:
            if provider is not None:
                try:
                    provider.shutdown()  # type: ignore[union-attr]
                except Exception as exc:  # an exporter that cannot reach its collector
                    # The message may hold the collector's URL, credentials included.
                    log.warning("telemetry shutdown: %s", self.redactor.redact(str(exc)))

    # -- per call / per handled message --------------------------------------------------

    def call(self, env: Envelope, target: object) -> Trace:
        """The trace of one outgoing call to ``target`` (a route; a no-op when telemetry is off)."""
        if not (self.tracing or self.metrics):
            return NO_TRACE
        return _CallTrace(self, env, str(target))

    def handle(self, env: Envelope, headers: Mapping[str, str] | None, agent: str, instance: str) -> Trace:
        """The trace of handling one message (a no-op when telemetry is off)."""
        if not (self.tracing or self.metrics):
            return NO_TRACE
        return _HandleTrace(self, env, headers, agent, instance)

    # -- spans ---------------------------------------------------------------------------

    def send_span(self, env: Envelope, target: str) -> AbstractContextManager[Span]:
        """The caller's span of one call; headers from :meth:`headers` carry it to the callee."""
        assert self._tracer is not None
        return self._tracer.start_as_current_span(
            f"send {target}.{env.payload.action}",
            kind=SpanKind.PRODUCER,
            record_exception=False,
            set_status_on_exception=False,
        )

    def process_span(
        self, env: Envelope, headers: Mapping[str, str] | None, agent: str
    ) -> AbstractContextManager[Span]:
        """The callee's span of handling one message, a child of the caller's span."""
        assert self._tracer is not None
        parent = _propagator.extract(dict(headers)) if headers else None
        return self._tracer.start_as_current_span(
            f"process {agent}.{env.payload.action}",
            context=parent,
            kind=SpanKind.CONSUMER,
            record_exception=False,
            set_status_on_exception=False,
        )

    def server_span(self, name: str, headers: Mapping[str, str]) -> AbstractContextManager[Span | None]:
        """A span for a request that came in over HTTP, a child of the client's ``traceparent``.

        Calls made inside it (and tasks started inside it) continue the client's trace, so
        one trace runs from an HTTP client to the deepest agent. A no-op when tracing is off.
        """
        if self._tracer is None:
            return nullcontext()
        carrier = {k.lower(): v for k, v in headers.items() if k.lower() in _TRACE_HEADERS}
        parent = _propagator.extract(carrier)
        return self._tracer.start_as_current_span(
            name, context=parent, kind=SpanKind.SERVER, record_exception=False, set_status_on_exception=False
        )

    def headers(self) -> dict[str, str]:
        """W3C trace context of the current span, for a message's headers."""
        carrier: dict[str, str] = {}
        _propagator.inject(carrier)
        return carrier

    def describe(self, span: Span, env: Envelope, operation: str) -> None:
        meta = env.metadata
        target = env.target_agent_id
        span.set_attributes(
            {
                "messaging.system": "nats",
                "messaging.operation": operation,
                "messaging.operation.type": operation,
                "messaging.message.id": meta.key,  # the message id proves a reply: not shown
                "messaging.message.conversation_id": meta.correlation_id,
                "a2a.action": env.payload.action,
                "a2a.source": env.source_agent_id,
                "a2a.target": target if isinstance(target, str) else ",".join(target),
                "a2a.hop_count": meta.hop_count,
                "a2a.depth": meta.depth,
                "a2a.correlation_id": meta.correlation_id,
                "a2a.request_id": meta.key,
                "a2a.conversation_id": env.conversation_id,
            }
        )
        if operation == "publish" and self.payloads and env.payload.parameters is not None:
            span.set_attribute("a2a.parameters", self.payload(env.payload.parameters))

    def outcome(self, span: Span, error: A2AError | None, result: Any = None) -> None:
        """Set the span's status (the error's description redacted) and, if opted in, the result."""
        if error is not None:
            span.set_attribute("a2a.error_code", error.code)
            if error.agent:
                span.set_attribute("a2a.error_agent", error.agent)
            span.set_status(Status(StatusCode.ERROR, f"{error.code}: {self.redactor.redact(error.message)}"))
        elif self.payloads and result is not None:
            span.set_attribute("a2a.result", self.payload(result))

    def payload(self, value: Any) -> str:
        """``value`` as JSON for a span attribute: secrets under secret key names and secrets
        in text redacted, then cut to a bounded length."""
        redactor = self.redactor
        try:
            text = msgspec.json.encode(redactor.redact_value(msgspec.to_builtins(value))).decode()
        except (TypeError, ValueError, msgspec.EncodeError):
            return repr(type(value))
        return redactor.redact(text)[:_PAYLOAD_LIMIT]

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
        if self.metrics:
            self._inflight.add(delta, {"a2a.agent": agent})

    def heartbeat_missed(self, instances: int) -> None:
        if self.metrics:
            self._missed.add(instances)

    def redacted(self, agent: str, found: Mapping[str, int]) -> None:
        """Count what the redactor hid from parameters ``agent`` sent, by kind (rule name)."""
        if self.metrics:
            for kind, count in found.items():
                self._redactions.add(count, {"a2a.agent": agent, "a2a.redaction.kind": kind})

    def watch_registry(self, size: Callable[[], int]) -> None:
        self._registry_size = size

    def _observe_registry(self, options: CallbackOptions) -> Iterator[Observation]:
        if self._registry_size is not None:
            yield Observation(self._registry_size())


class _CallTrace(Trace):
    """The caller's span (PRODUCER) and call metrics of one call."""

    __slots__ = ("action", "done", "manager", "span", "started", "target", "tel")

    def __init__(self, tel: Telemetry, env: Envelope, target: str) -> None:
        self.tel = tel
        self.target = target
        self.action = env.payload.action
        self.started = time.monotonic()
        self.done = False
        self.manager: AbstractContextManager[Span] | None = None
        self.span: Span | None = None
        if tel.tracing:
            self.manager = tel.send_span(env, target)
            self.span = self.manager.__enter__()
            tel.describe(self.span, env, "publish")

    def sending(self, subject: str, target: str) -> dict[str, str] | None:
        self.target = target
        if self.span is None:
            return None
        self.span.set_attribute("messaging.destination.name", subject)
        self.span.set_attribute("a2a.target", target)
        self.span.update_name(f"send {target}.{self.action}")
        return self.tel.headers()

    def ended(self, error: A2AError | None, result: Any = None) -> None:
        self.done = True
        if self.span is not None:
            self.tel.outcome(self.span, error, result)
        if self.tel.metrics:
            code = error.code if error else None
            elapsed = time.monotonic() - self.started
            self.tel.record_call(self.target, self.action, outcome_of(error), code, elapsed)
        self.close()

    def close(self) -> None:
        if not self.done:
            self.done = True
            if self.tel.metrics:
                elapsed = time.monotonic() - self.started
                self.tel.record_call(self.target, self.action, "cancelled", None, elapsed)
        if self.manager is not None:
            manager, self.manager = self.manager, None
            manager.__exit__(None, None, None)


class _HandleTrace(Trace):
    """The callee's span (CONSUMER), in-flight gauge and handling metrics of one message."""

    __slots__ = ("action", "agent", "closed", "manager", "span", "started", "tel")

    def __init__(
        self, tel: Telemetry, env: Envelope, headers: Mapping[str, str] | None, agent: str, instance: str
    ) -> None:
        self.tel = tel
        self.agent = agent
        self.closed = False
        self.action = env.payload.action
        self.started = time.monotonic()
        self.manager: AbstractContextManager[Span] | None = None
        self.span: Span | None = None
        if tel.tracing:
            self.manager = tel.process_span(env, headers, agent)
            self.span = self.manager.__enter__()
            tel.describe(self.span, env, "process")
            self.span.set_attribute("a2a.instance", instance)
        tel.inflight(agent, 1)

    def ended(self, error: A2AError | None, result: Any = None) -> None:
        if self.span is not None:
            self.tel.outcome(self.span, error, result)
        if self.tel.metrics:
            code = error.code if error else None
            elapsed = time.monotonic() - self.started
            self.tel.record_handled(self.agent, self.action, outcome_of(error), code, elapsed)
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.tel.inflight(self.agent, -1)
        if self.manager is not None:
            manager, self.manager = self.manager, None
            manager.__exit__(None, None, None)
