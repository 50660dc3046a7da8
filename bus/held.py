"""A call an endpoint holds while its handler runs."""

from __future__ import annotations

import asyncio
from typing import Any

from .protocol import MAX_RESPONSES

__all__ = ["Held"]


class Held:
    """A call being handled: whom to answer, until when, and the task to stop.

    ``started``, ``deadline`` and ``acked_at`` are on the event loop's clock.
    """

    __slots__ = (
        "acked",
        "acked_at",
        "deadline",
        "reason",
        "released",
        "reply",
        "sender",
        "sent",
        "started",
        "task",
    )

    def __init__(
        self, task: asyncio.Task[Any], reply: str, started: float, deadline: float, sender: str
    ) -> None:
        self.task = task
        self.reply = reply
        self.sender = sender
        """The sender token of the request's subject: only it may withdraw the call."""
        self.started = started
        self.deadline = deadline
        self.acked = False
        self.acked_at = 0.0
        """When the call was last acknowledged (acks are sent again at most once per probe round)."""
        self.sent = 0
        """Messages published on ``reply`` before the reply: acks, progress updates, checks."""
        self.released = False
        """The handling ended: its task (a reusable worker) may be handling another call now."""
        self.reason: str | None = None
        """Why the endpoint stopped the task: WITHDRAWN, CALLER_GONE, SHUTDOWN or DEADLINE."""

    def cancel(self, reason: str) -> None:
        if self.reason is None and not self.released:
            self.reason = reason
            self.task.cancel()

    def fits(self, reserve: int) -> bool:
        """Whether one more message on ``reply`` leaves ``reserve`` places and the reply's free
        (of the MAX_RESPONSES the generated permissions allow)."""
        return self.sent + reserve + 2 <= MAX_RESPONSES
