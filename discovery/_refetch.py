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

__all__ = ["Refetch"]


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
