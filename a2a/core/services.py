"""What the call path, handler contexts and hosts share, handed down by the runtime."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..delegation.context_builder import ContextBuilder
from ..delegation.policy import Policy
from ..delegation.redact import Redactor
from ..observability.telemetry import Telemetry
from ..stores.audit import AuditLog
from ..stores.capture import HistoryRecorder
from ..stores.facts import FactStore
from ..stores.history import HistoryStore
from .guard import Guard

__all__ = ["Services"]

log = logging.getLogger("a2a.runtime")


@dataclass(frozen=True, slots=True, eq=False)
class Services:
    """The runtime's shared services; read-only for everything below the runtime."""

    policy: Policy
    redactor: Redactor
    context_builder: ContextBuilder
    telemetry: Telemetry
    audit: AuditLog
    history: HistoryStore | None
    clock: Callable[[], float]
    """The event loop's clock (monotonic seconds); deadlines are on this clock."""
    guard: Guard
    """What a callee decides by itself: its own limits, the sender, the lineage, the user."""
    facts: FactStore | None = None
    """Facts delegated agents learned about each user (``new_facts``), where there is Redis."""
    recorder: HistoryRecorder | None = None
    """Writes each call a host handles to its conversation's history (None: not kept)."""
    _degraded: set[str] = field(default_factory=set)

    def log_degraded(self, message: str) -> None:
        """Log a degraded-service condition once per distinct message."""
        if message not in self._degraded:
            self._degraded.add(message)
            log.warning("%s", message)
