"""How long a stdio agent's turns may take, how its processes are stopped and restarted."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..prompt.frames import Constraints
from ..prompt.turns import TOOL_TURN_SECONDS, TURN_SECONDS, turn_seconds

__all__ = ["StdioConfig", "turn_timeout"]


@dataclass(frozen=True, slots=True)
class StdioConfig:
    """Timeouts, grace periods, restart back-off and bounds; the defaults are the seed's rules.

    Attributes:
        timeout: seconds a turn may take when ``constraints.allow_tool_use`` is false.
        tool_timeout: seconds a turn may take with tool use; also the ceiling of
            ``constraints.local_turn_timeout_ms``.
        grace: after a request timed out or was withdrawn, seconds its process still has
            to send the terminal frame before it is killed and restarted.
        close_grace: on shutdown, seconds after closing stdin before SIGTERM, and after
            SIGTERM before SIGKILL.
        backoff_first, backoff_max: seconds before restarting a process that exited on its
            own, doubling from the first to the most with each exit in a row.
        backoff_reset: a process that lived this long starts the back-off over.
        max_line: bytes of one stdout line at most; a longer line is dropped as a violation,
            and when it is the answer to the request in flight (it names its ``request_id``
            near its start or end) that request fails with PAYLOAD_TOO_LARGE.
        stderr_tail: stderr lines of each process kept for error messages.
        stderr_per_second: stderr lines of each process logged per second at most.
    """

    timeout: float = TURN_SECONDS
    tool_timeout: float = TOOL_TURN_SECONDS
    grace: float = 2.0
    close_grace: float = 2.0
    backoff_first: float = 0.2
    backoff_max: float = 30.0
    backoff_reset: float = 60.0
    max_line: int = 1 << 20
    stderr_tail: int = 20
    stderr_per_second: int = 50

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"StdioConfig.{f.name} must be a finite number above 0, got {value!r}")
        if self.backoff_max < self.backoff_first:
            raise ValueError("StdioConfig.backoff_max must not be below backoff_first")


def turn_timeout(constraints: Constraints, config: StdioConfig) -> float:
    """Seconds one turn may take under ``config``'s timeouts (:func:`a2a.prompt.turn_seconds`)."""
    return turn_seconds(constraints, config.timeout, config.tool_timeout)
