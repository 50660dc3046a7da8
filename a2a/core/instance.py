"""What every handling of one hosted agent instance shares."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from bus.protocol import PROGRESS_BYTES

from .calls import CallPath
from .route import Target
from .services import Services
from .task_handle import Task

__all__ = ["ChildOptions", "ChildTasks", "Instance"]

log = logging.getLogger("a2a.agent")
_encode = msgspec.json.Encoder().encode


class ChildTasks(Protocol):
    """Durable tasks as a handler submits them (the runtime's :class:`a2a.core.durable.Tasks`)."""

    async def submit_child(
        self, parent: Any, target: Target, action: str, params: dict[str, Any] | None, options: ChildOptions
    ) -> Task: ...


@dataclass(frozen=True, slots=True)
class ChildOptions:
    """What a handler chooses of a child task: its key, timeout and attempts (None: the defaults)."""

    key: str | None = None
    timeout: float | None = None
    max_attempts: int | None = None


@dataclass(frozen=True, slots=True)
class Instance:
    """What every context of one hosted instance shares."""

    services: Services
    calls: CallPath
    agent: str
    instance_id: str
    progress: Callable[[str, bytes], Awaitable[None]]
    """Sends a progress update on a reply subject (the hosting endpoint's)."""
    tasks: ChildTasks | None = None
    """Where its handlers submit durable tasks (None: tasks are not available here)."""
    redact_params: bool | None = None
    """The agent's choice of redacting the parameters its handlers send (None: the runtime's)."""

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
