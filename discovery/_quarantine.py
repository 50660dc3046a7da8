"""Instance ids a view ignores for a while, in bounded memory."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Quarantine"]


class Quarantine:
    """Ids held for ``duration`` seconds each; at most ``limit`` at once (the oldest go first)."""

    def __init__(
        self, duration: float, *, limit: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.duration = duration
        self.limit = limit
        self.clock = clock
        self._until: dict[str, float] = {}
        """Id -> end of its quarantine, in insertion order (so also in order of expiry)."""

    def add(self, agent_id: str) -> None:
        self._until.pop(agent_id, None)  # re-inserted at the end: the order stays by expiry
        if len(self._until) >= self.limit:
            self.expire()
            while len(self._until) >= self.limit:
                del self._until[next(iter(self._until))]
        self._until[agent_id] = self.clock() + self.duration

    def __contains__(self, agent_id: str) -> bool:
        if not self._until:  # the usual case: nothing held, no clock read
            return False
        until = self._until.get(agent_id)
        if until is None:
            return False
        return self.clock() < until

    def waiting(self, agent_id: str) -> bool:
        """Whether ``agent_id`` was added and :meth:`expire` has not returned it yet."""
        return agent_id in self._until

    def expire(self) -> list[str]:
        """Forget the ids whose time is up, and return them (to be read back: they may live)."""
        now = self.clock()
        released = []
        while self._until:
            first = next(iter(self._until))
            if self._until[first] > now:
                break
            del self._until[first]
            released.append(first)
        return released

    def __len__(self) -> int:
        return len(self._until)
