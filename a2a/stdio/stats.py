"""What a stdio agent's processes did: counters, protocol violations, and their stderr.

Every protocol violation is counted by kind in :attr:`StdioStats.violations` (a
:class:`bus.rejects.Rejects`, which logs at most one warning per kind every ten seconds).
A process's stderr goes to the log line by line, prefixed with the agent name and the
process index, at most ``per_second`` lines a second (the rest counted, and said when
logging resumes); its last lines are kept for error messages.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from bus.rejects import Rejects

__all__ = ["StderrLog", "StdioStats"]

log = logging.getLogger("a2a.stdio")


class StdioStats:
    """Counters of one stdio agent (all of its processes), since the peer was created."""

    def __init__(self, name: str) -> None:
        self.started = 0
        """Processes spawned."""
        self.restarts = 0
        """Processes spawned again after one exited."""
        self.crashes = 0
        """Exits nobody asked for (a crash, or a program that ends on its own)."""
        self.killed = 0
        """Processes killed because a withdrawn or timed-out request got no terminal frame in time."""
        self.failures = 0
        """Unexpected errors of the bridge itself while starting or serving a process (each
        logged; the process was stopped and its slot restarted)."""
        self.requests = 0
        """Request frames written."""
        self.answered = 0
        """Terminal frames received for requests in flight (or draining)."""
        self.timeouts = 0
        """Requests that ran out of time."""
        self.progress = 0
        """Progress frames forwarded."""
        self.stderr_lines = 0
        self.violations = Rejects(log, f"stdio agent {name}: output line")
        """Protocol violations by kind: ``oversized line``, ``not utf-8``, ``not json``,
        ``not a frame``, ``undecodable``, ``unknown request_id``, ``duplicate terminal``,
        ``malformed response``, ``bad line`` (anything else a line caused)."""

    def as_dict(self) -> dict[str, object]:
        """The counters as plain data (for logs and status pages)."""
        return {
            "started": self.started,
            "restarts": self.restarts,
            "crashes": self.crashes,
            "killed": self.killed,
            "failures": self.failures,
            "requests": self.requests,
            "answered": self.answered,
            "timeouts": self.timeouts,
            "progress": self.progress,
            "stderr_lines": self.stderr_lines,
            "violations": dict(self.violations.by_kind),
        }


class StderrLog:
    """One process's stderr: logged at a bounded rate, its last lines kept."""

    def __init__(
        self,
        label: str,
        stats: StdioStats,
        *,
        tail_lines: int = 20,
        per_second: int = 50,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self._stats = stats
        self._tail: deque[str] = deque(maxlen=tail_lines)
        self._per_second = per_second
        self._clock = clock
        self._window = clock()
        self._in_window = 0
        self._unlogged = 0

    def line(self, data: bytes, complete: bool = True) -> None:
        """Take one stderr line (``complete`` False: it was cut at the reader's limit)."""
        text = data.decode(errors="replace").rstrip() + ("" if complete else " …")
        self._stats.stderr_lines += 1
        self._tail.append(text[:300])
        now = self._clock()
        if now - self._window >= 1.0:
            if self._unlogged:
                log.info("%s stderr: (%d lines not logged)", self.label, self._unlogged)
            self._window, self._in_window, self._unlogged = now, 0, 0
        if self._in_window >= self._per_second:
            self._unlogged += 1
            return
        self._in_window += 1
        log.info("%s stderr: %s", self.label, text)

    def flush(self) -> None:
        """Say how many lines went unlogged since the last one logged (at the process's exit)."""
        if self._unlogged:
            log.info("%s stderr: (%d lines not logged)", self.label, self._unlogged)
            self._unlogged = 0

    def tail(self, limit: int = 600) -> str:
        """The last lines, joined with `` | ``, at most ``limit`` characters (the newest kept)."""
        text = " | ".join(line for line in self._tail if line)
        return text if len(text) <= limit else "…" + text[-(limit - 1) :]
