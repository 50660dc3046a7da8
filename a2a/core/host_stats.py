"""What an agent instance counts of the messages it took, and how its lifespan says it can serve."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["HostStats", "Readiness"]


@runtime_checkable
class Readiness(Protocol):
    """What an agent's lifespan may enter to say whether it can serve now (a peer whose
    processes are all down cannot): while it says False the instance reports ``offline``."""

    def watch_ready(self, on_change: Callable[[bool], None]) -> None:
        """Call ``on_change`` with the current answer, then each time it changes."""


@dataclass
class HostStats:
    handled: int = 0
    failed: int = 0
    refused: int = 0
    overloaded: int = 0
    invalid: int = 0
    cancelled: int = 0
    repeated: int = 0
    """Calls received again (after a reconnect) and answered from the reply cache."""
