"""Which remote context (and which remote task waiting for input) a bus conversation is in.

A remote A2A agent groups the messages of one conversation by ``contextId``, which it
assigns on the first message; a task it stops in ``input-required`` is continued by a
message naming its ``taskId``. :class:`Conversations` remembers both per bus conversation
(the user and the conversation id of the call, so one user cannot continue another's
remote context by reusing a conversation id) for the calls of one proxy instance, at
most :data:`MAX_CONVERSATIONS` of them, the least recently used forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["MAX_CONVERSATIONS", "Conversations", "Thread"]

MAX_CONVERSATIONS = 10_000
"""Bus conversations whose remote context one proxy instance remembers."""

Key = tuple[str, str]
"""The user (empty when none) and the conversation id of a call."""


@dataclass(frozen=True, slots=True)
class Thread:
    """A conversation's remote ``contextId``, and the ``taskId`` of its task waiting for input."""

    context_id: str
    task_id: str = ""


class Conversations:
    """Bounded memory of :class:`Thread` per bus conversation (module docstring)."""

    def __init__(self, limit: int = MAX_CONVERSATIONS) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit = limit
        self._threads: OrderedDict[Key, Thread] = OrderedDict()

    def __len__(self) -> int:
        return len(self._threads)

    def get(self, key: Key) -> Thread | None:
        """The conversation's thread, if one is remembered (it becomes the most recently used)."""
        thread = self._threads.get(key)
        if thread is not None:
            self._threads.move_to_end(key)
        return thread

    def record(self, key: Key, context_id: str, task_id: str = "") -> None:
        """Remember the remote context (nothing when empty), and the task waiting for input if any."""
        if not context_id:
            return
        self._threads[key] = Thread(context_id, task_id)
        self._threads.move_to_end(key)
        while len(self._threads) > self.limit:
            self._threads.popitem(last=False)
