"""The caller's side of seed 002's cycle rule: an objective is not given twice.

A delegation names its objective; the same caller giving the same agent the same objective
in the same conversation while the first is still in progress, or within
``Settings.objective_window`` seconds after it was answered, is a loop (CYCLE_DETECTED).
A failed delegation may be asked again at once (a retry, not a loop). The callee checks
objectives in progress too, across processes (:func:`a2a.core.admission.claim_stored`).
"""

from __future__ import annotations

import time

from bus.errors import CycleDetected
from bus.wire import RequestEnvelope

from ..stores.history import objective_key

__all__ = ["DONE_KEPT", "Objectives"]

DONE_KEPT = 4096
"""Objectives done lately that a caller remembers at most (the oldest are forgotten first)."""


class Objectives:
    """The objectives one runtime's calls hold now, and those answered lately."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._running: set[str] = set()
        self._done: dict[str, float] = {}
        """Objectives answered lately, and until when (monotonic) they count."""

    def start(self, env: RequestEnvelope, target: str) -> str:
        """Hold the objective of ``env`` (a delegation) for ``target``; its key.

        Raises:
            CycleDetected: it is in progress already, or was answered lately.
        """
        assert env.delegation is not None
        objective = env.delegation.objective
        key = objective_key(env.conversation_id, env.source_agent_id, target, objective)
        if key in self._running:
            raise CycleDetected(
                f"{env.source_agent_id} -> {target} with the same objective is already in progress",
                details={"objective": objective, "target": target},
            )
        until = self._done.get(key)
        if until is not None and until > time.monotonic():
            raise CycleDetected(
                f"{env.source_agent_id} -> {target} with the same objective was answered "
                f"already (within the last {self.window:g} s): asking again is a loop",
                details={"objective": objective, "target": target, "answered": True},
            )
        self._running.add(key)
        return key

    def end(self, key: str) -> None:
        """The call holding ``key`` ended (answered or not)."""
        self._running.discard(key)

    def done(self, key: str) -> None:
        """The call holding ``key`` was answered: the same objective counts as a loop for a while."""
        if self.window <= 0:
            return
        now = time.monotonic()
        if len(self._done) >= DONE_KEPT:  # the expired ones go; then the oldest, if need be
            self._done = {k: t for k, t in self._done.items() if t > now}
            while len(self._done) >= DONE_KEPT:
                del self._done[next(iter(self._done))]
        self._done.pop(key, None)  # re-inserted last: the dict's order is the order of expiry
        self._done[key] = now + self.window
