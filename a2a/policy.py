"""Delegation policy: who may call whom. The default allows every call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bus.wire import Envelope

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["Policy"]


class Policy:
    """Checks a runtime applies on both sides of a hop, beyond the bus limits.

    ``check_call`` runs in the caller before a request is sent; ``admit`` runs in the
    callee on receipt and must not rely on the caller having run ``check_call``.
    Both raise a typed A2AError to refuse.
    """

    def check_call(self, caller: str | None, target: str, envelope: Envelope) -> None:
        """Caller side; ``caller`` is None for calls from outside any agent."""

    def admit(self, agent: Agent, envelope: Envelope) -> None:
        """Callee side."""
