"""Pending calls: correlationId -> the future its reply resolves."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from .errors import A2AError

__all__ = ["NO_RESPONDERS", "TIMED_OUT", "Outcome", "PendingCalls", "Reply"]


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_RESPONDERS = _Marker("NO_RESPONDERS")
TIMED_OUT = _Marker("TIMED_OUT")

Outcome = bytes | A2AError | _Marker
"""What a call's future resolves to: the reply's bytes, an error, or a marker."""


class Reply:
    """One pending call; ``instance`` is set once the instance holding it acknowledged it.

    ``request`` keeps what was published (data, reply subject, headers) so the call can
    be sent again after the connection was lost.
    """

    __slots__ = ("future", "instance", "local", "opened", "request", "subject")

    def __init__(self, future: asyncio.Future[Outcome], opened: float, subject: str) -> None:
        self.future = future
        self.instance: str | None = None
        self.opened = opened
        self.subject = subject
        self.request: tuple[bytes, str, Mapping[str, str] | None] | None = None
        self.local = False
        """Delivered to a callee in this process (nothing to send again after a reconnect)."""


class PendingCalls:
    """Open calls by correlationId. Every opened call must be closed (``finally``)."""

    def __init__(self) -> None:
        self._slots: dict[str, Reply] = {}
        self.late_replies = 0

    def open(self, correlation_id: str, loop: asyncio.AbstractEventLoop, subject: str) -> Reply:
        if correlation_id in self._slots:
            raise ValueError(f"a call with correlationId {correlation_id!r} is already pending")
        slot = self._slots[correlation_id] = Reply(loop.create_future(), loop.time(), subject)
        return slot

    def get(self, correlation_id: str) -> Reply | None:
        return self._slots.get(correlation_id)

    def close(self, correlation_id: str) -> None:
        self._slots.pop(correlation_id, None)

    def resolve(self, correlation_id: str, outcome: Outcome) -> bool:
        """Settle a call; False (and counted as late) when nobody waits for it any more."""
        slot = self._slots.get(correlation_id)
        if slot is None or slot.future.done():
            self.late_replies += 1
            return False
        slot.future.set_result(outcome)
        return True

    def fail_subject(self, subject: str, error: A2AError) -> int:
        """End every unanswered call sent to ``subject`` with ``error``; returns how many."""
        failed = 0
        for slot in self._slots.values():
            if slot.subject == subject and not slot.future.done():
                slot.future.set_result(error)
                failed += 1
        return failed

    def acknowledge(self, correlation_id: str, instance: str) -> None:
        slot = self._slots.get(correlation_id)
        if slot is not None:
            slot.instance = instance

    def unanswered(self) -> list[Reply]:
        """Calls still waiting for a reply."""
        return [slot for slot in self._slots.values() if not slot.future.done()]

    def acknowledged_before(self, when: float) -> dict[str, list[str]]:
        """Instance -> ids of unanswered calls it acknowledged that were opened before ``when``."""
        out: dict[str, list[str]] = {}
        for correlation_id, slot in self._slots.items():
            if slot.instance is not None and slot.opened < when and not slot.future.done():
                out.setdefault(slot.instance, []).append(correlation_id)
        return out

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, correlation_id: object) -> bool:
        return correlation_id in self._slots
