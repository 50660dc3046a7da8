"""A request in flight on a channel: the progress updates it collects, and how it ended."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from bus.errors import A2AError

from ..prompt.frames import LocalPromptResponse

__all__ = ["PROGRESS_QUEUE", "Pending", "ProgressSink"]

ProgressSink = Callable[[str], Awaitable[None]]
"""Where a request's progress texts go (the handler forwards them with ``ctx.progress``)."""

PROGRESS_QUEUE = 64
"""Progress updates waiting for the handler at most; more are dropped."""


class Pending:
    """A request in flight: its progress updates, and how it ended."""

    __slots__ = ("abandoned", "answered", "changed", "error", "request_id", "response", "updates")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.updates: deque[str] = deque()
        self.changed = anyio.Event()
        self.answered = anyio.Event()
        self.response: LocalPromptResponse | None = None
        self.error: A2AError | None = None
        self.abandoned = False

    def push(self, text: str) -> bool:
        """Queue a progress text; False when it is dropped (the request ended or the queue is full)."""
        if self.abandoned or self.answered.is_set() or len(self.updates) >= PROGRESS_QUEUE:
            return False
        self.updates.append(text)
        self.changed.set()
        return True

    def finish(self, response: LocalPromptResponse | None = None, error: A2AError | None = None) -> None:
        """End the request with its response or an error; whoever waits in :meth:`outcome` wakes."""
        self.response, self.error = response, error
        self.answered.set()
        self.changed.set()

    async def outcome(self, on_progress: ProgressSink | None) -> LocalPromptResponse:
        """Forward progress until the request ends; its response, or its error raised."""
        while True:
            if self.updates:
                text = self.updates.popleft()
                if on_progress is not None:
                    await on_progress(text)
                continue
            if self.answered.is_set():
                break
            # A fresh event before waiting, with no await since the checks above: whatever
            # arrives from here on sets this one.
            self.changed = anyio.Event()
            await self.changed.wait()
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response
