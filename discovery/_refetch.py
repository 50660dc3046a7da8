"""How often a view reads one instance back from Redis: at most once per interval, in bounded memory.

Anyone who may publish on the events channel can announce one instance (``reg``) a
thousand times a second; each announcement used to cost a read of its entry in every
view. Now the first read of an id goes ahead, and requests within ``interval`` of it
only mark the id as due: it is read once more when the interval is over, so a genuine
change announced in between still arrives, one interval late at worst.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["ReadBudget", "Refetch"]


class Refetch:
    """Per-id read times; at most ``limit`` ids remembered and ``limit`` ids due (the oldest go first)."""

    def __init__(
        self, interval: float, *, limit: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval = interval
        self.limit = limit
        self.clock = clock
        self._read: dict[str, float] = {}
        """Id -> when it was last read, in insertion order (so also by time)."""
        self._due: dict[str, None] = {}
        """Ids asked for again within their interval, oldest first."""
        self._next_check = 0.0

    def allow(self, agent_id: str) -> bool:
        """True when ``agent_id`` may be read now (and notes the read); else it is marked due.

        When ``limit`` ids are due already, True: a read now instead of one forgotten.
        """
        now = self.clock()
        last = self._read.get(agent_id)
        if last is not None and now - last < self.interval:
            if agent_id in self._due:
                return False
            if len(self._due) < self.limit:
                self._due[agent_id] = None
                return False
            # No room to remember it: read now rather than lose the read (a flood of
            # distinct ids costs reads, never a missed change).
        self._note(agent_id, now)
        return True

    def due(self) -> list[str]:
        """Ids marked due whose interval is over (noted as read now); checked a few times per interval."""
        if not self._due:
            return []
        now = self.clock()
        if now < self._next_check:
            return []
        self._next_check = now + self.interval / 4
        ready = [i for i in self._due if now - self._read.get(i, -self.interval) >= self.interval]
        for agent_id in ready:
            del self._due[agent_id]
            self._note(agent_id, now)
        return ready

    def _note(self, agent_id: str, now: float) -> None:
        self._read.pop(agent_id, None)  # re-inserted at the end: the order stays by time
        self._read[agent_id] = now
        if len(self._read) > self.limit:
            del self._read[next(iter(self._read))]  # forgotten: its next read may come sooner


class ReadBudget:
    """Reads a view makes for events per ``window`` seconds: ``floor`` or the view's size, whichever is more.

    A flood of events naming distinct ids would cost a read each; past the budget they cost
    nothing, and the view loads a whole snapshot once the window is over instead (one
    listing per window, however many events came).
    """

    def __init__(
        self, window: float, *, floor: int = 1000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window = window
        self.floor = floor
        self.clock = clock
        self._start = clock()
        self._used = 0
        self._over = False

    def take(self, entries: int) -> bool:
        """Whether one more read fits this window (``entries``: the view's size)."""
        self._roll()
        if self._used >= max(self.floor, entries):
            self._over = True
            return False
        self._used += 1
        return True

    def resync_due(self) -> bool:
        """True once for a window that ran over its budget, when that window is over."""
        if self._over and self.clock() - self._start >= self.window:
            self._over = False
            self._roll()
            return True
        return False

    def _roll(self) -> None:
        now = self.clock()
        if now - self._start >= self.window and not self._over:
            self._start, self._used = now, 0
