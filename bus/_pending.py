"""Pending calls: requestId -> the future its reply resolves, and the deadline it ends at."""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, ItemsView, Mapping
from typing import Any

from .errors import A2AError, AgentLost
from .tasks import loop_clock
from .wire import Envelope, RequestEnvelope

__all__ = ["NO_RESPONDERS", "TIMED_OUT", "Outcome", "PendingCalls", "Reply", "nobody_serves"]


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_RESPONDERS = _Marker("NO_RESPONDERS")
TIMED_OUT = _Marker("TIMED_OUT")

Outcome = bytes | Envelope | A2AError | _Marker
"""What a call's future resolves to: the reply's bytes (or its envelope, from a reply batch,
checked as it arrived), an error, or a marker."""


class Reply:
    """One pending call; ``instance`` is set once the instance holding it acknowledged it.

    ``request`` keeps what was published (data, reply subject, headers) so the call can
    be sent again after the connection was lost.
    """

    __slots__ = (
        "deadline",
        "envelope",
        "future",
        "instance",
        "local",
        "on_progress",
        "opened",
        "request",
        "resent",
        "subject",
        "unclaimed",
        "unclaimed_since",
    )

    def __init__(self, future: asyncio.Future[Outcome], opened: float, deadline: float, subject: str) -> None:
        self.future = future
        self.instance: str | None = None
        self.opened = opened
        self.deadline = deadline
        self.subject = subject
        self.request: tuple[bytes, str, Mapping[str, str] | None] | None = None
        self.envelope: RequestEnvelope | None = None
        """The request, which a line of a reply batch must answer (None: a probe)."""
        self.resent = False
        """Published more than once (sent again after a reconnect)."""
        self.local = False
        """Delivered to a callee in this process (nothing to send again after a reconnect)."""
        self.on_progress: Callable[[Any], None] | None = None
        """Called with each progress update the callee sends, when the caller asked for them."""
        self.unclaimed = 0
        """Probe rounds in a row in which no instance claimed this unacknowledged call."""
        self.unclaimed_since = 0.0
        """When the first of those rounds asked (loop clock)."""


def nobody_serves(slot: Reply | None) -> Outcome:
    """What the server's "no responders" to a call means: NO_RESPONDERS (it never ran, safe to
    retry), unless an instance acknowledged it or it was sent again after a reconnect: its
    first copy may have run where nobody answers now (AGENT_LOST)."""
    if slot is None or not (slot.instance or slot.resent):
        return NO_RESPONDERS
    where = slot.instance or slot.subject
    return AgentLost(f"nobody serves {where} any more; the call may have run", details={"subject": where})


class PendingCalls:
    """Open calls by requestId. Every opened call must be closed (``finally``).

    A call that is still open at its deadline resolves to ``TIMED_OUT`` exactly then.
    Deadlines are kept in one heap of ``(deadline, requestId)`` tuples with a single
    event-loop timer for the earliest, instead of a timer per call: an asyncio timer is a
    Python object compared in Python on every heap operation, and arming and cancelling
    one per call cost more than the rest of the caller's bookkeeping. Entries of calls
    that ended are dropped when they reach the top, or all at once when they outnumber
    the open calls.
    """

    def __init__(self) -> None:
        self._slots: dict[str, Reply] = {}
        self._deadlines: list[tuple[float, str]] = []
        self._alarm: asyncio.TimerHandle | None = None
        self._alarm_at = float("inf")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clock: Callable[[], float] | None = None
        self.late_replies = 0

    def open(
        self, correlation_id: str, loop: asyncio.AbstractEventLoop, subject: str, timeout: float | None = None
    ) -> Reply:
        """Register a call; with ``timeout``, it resolves to ``TIMED_OUT`` that many seconds from now."""
        slots = self._slots
        if correlation_id in slots:
            raise ValueError(f"a call with requestId {correlation_id!r} is already pending")
        clock = self._clock
        if clock is None:
            clock = self._clock = loop_clock(loop)
        now = clock()
        deadline = now + timeout if timeout is not None else float("inf")
        slot = slots[correlation_id] = Reply(loop.create_future(), now, deadline, subject)
        if timeout is not None:
            deadlines = self._deadlines
            heapq.heappush(deadlines, (deadline, correlation_id))
            if deadline < self._alarm_at:
                self._arm(loop, deadline)
            elif len(deadlines) > 64 and len(deadlines) > 2 * len(slots):
                self._deadlines = [entry for entry in deadlines if entry[1] in slots]
                heapq.heapify(self._deadlines)
        return slot

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._alarm is not None:
            self._alarm.cancel()
        self._loop = loop
        self._alarm_at = when
        self._alarm = loop.call_at(when, self._expire)

    def _expire(self) -> None:
        """The alarm: end every open call whose deadline has come, then wait for the next one."""
        assert self._loop is not None
        self._alarm = None
        self._alarm_at = float("inf")
        now = self._loop.time()
        deadlines = self._deadlines
        slots = self._slots
        while deadlines:
            deadline, correlation_id = deadlines[0]
            slot = slots.get(correlation_id)
            if slot is None or slot.deadline != deadline:
                heapq.heappop(deadlines)  # that call ended already
                continue
            if deadline > now:
                self._arm(self._loop, deadline)
                return
            heapq.heappop(deadlines)
            if not slot.future.done():
                slot.future.set_result(TIMED_OUT)

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

    def items(self) -> ItemsView[str, Reply]:
        """The open calls (probes included: their subject is empty)."""
        return self._slots.items()

    def aclose(self, error: A2AError) -> None:
        """The owner is closing: every call still waiting ends with ``error`` (no reply can
        come any more, and no deadline will be watched), and the alarm stops."""
        for slot in self._slots.values():
            if not slot.future.done():
                slot.future.set_result(error)
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm = None

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, correlation_id: object) -> bool:
        return correlation_id in self._slots
