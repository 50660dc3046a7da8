"""What every handling of one hosted agent instance shares."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from bus.protocol import PROGRESS_BYTES

from .calls import CallPath
from .services import Services

__all__ = ["Instance"]

log = logging.getLogger("a2a.agent")
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class Instance:
    """What every context of one hosted instance shares."""

    services: Services
    calls: CallPath
    agent: str
    instance_id: str
    progress: Callable[[str, bytes], Awaitable[None]]
    """Sends a progress update on a reply subject (the hosting endpoint's)."""

    async def send_progress(self, reply: str, update: Any) -> None:
        """Send ``update`` on ``reply``; one that is not JSON-serialisable or is larger than
        PROGRESS_BYTES encoded is dropped and logged."""
        try:
            data = _encode(update)
        except (TypeError, ValueError, OverflowError) as exc:
            log.warning("%s: progress update dropped: %s", self.agent, exc)
            return
        if len(data) > PROGRESS_BYTES:
            log.warning("%s: progress update of %d bytes dropped", self.agent, len(data))
            return
        await self.progress(reply, data)
