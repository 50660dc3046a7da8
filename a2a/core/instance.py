"""What every handling of one hosted agent instance shares."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .calls import CallPath
from .services import Services

__all__ = ["Instance"]


@dataclass(frozen=True, slots=True)
class Instance:
    """What every context of one hosted instance shares."""

    services: Services
    calls: CallPath
    agent: str
    instance_id: str
    progress: Callable[[str, bytes], Awaitable[None]]
    """Sends a progress update on a reply subject (the hosting endpoint's)."""
