"""Seeing what the runtime does: OpenTelemetry spans and metrics, health endpoints."""

from .health import serve_health as serve_health
from .telemetry import NO_TRACE as NO_TRACE
from .telemetry import Telemetry as Telemetry
from .telemetry import Trace as Trace

__all__ = ["NO_TRACE", "Telemetry", "Trace", "serve_health"]
