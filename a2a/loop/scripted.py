"""Models without a model: canned replies, for tests and deterministic demos."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .driver import Message

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """A model that answers with ``replies`` in order; a reply given as a dict is sent as JSON.

    Every conversation it was shown is kept in ``seen``. Asked once more than it has
    replies, it raises ``LookupError`` (the loop reports that as the model failing).
    """

    def __init__(self, replies: Iterable[str | dict[str, Any]]) -> None:
        self.replies = [r if isinstance(r, str) else json.dumps(r) for r in replies]
        self.seen: list[list[Message]] = []

    async def __call__(self, messages: list[Message]) -> str:
        self.seen.append(messages)
        if len(self.seen) > len(self.replies):
            raise LookupError(f"the script has only {len(self.replies)} replies")
        return self.replies[len(self.seen) - 1]

    def observations(self) -> list[dict[str, Any]]:
        """The observations the loop sent, decoded, in order (from the last conversation seen)."""
        if not self.seen:
            return []
        last = self.seen[-1]
        return [json.loads(m["content"]) for m in last[2:] if m["role"] == "user"]
