"""Counting refused input, and warning about it without letting a flood flood the log.

Whoever can reach a server can send any number of bad items: each is counted, and at most
one warning per kind is logged every ``WARN_EVERY`` seconds.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

__all__ = ["Rejects"]

WARN_EVERY = 10.0
"""Seconds between two warnings of one kind; the ones in between are counted, not logged."""


class Rejects:
    """Refused items by kind, with at most one warning per kind every ``interval`` seconds.

    The warning that follows a quiet period says how many went unlogged since the last one.
    """

    def __init__(
        self,
        log: logging.Logger,
        what: str,
        *,
        interval: float = WARN_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.what = what
        self.interval = interval
        self.clock = clock
        self.total = 0
        self.by_kind: Counter[str] = Counter()
        self._last_warning: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()

    def __call__(self, kind: str, detail: object) -> None:
        """Count one refused item of ``kind`` (a short fixed word) and maybe warn about it."""
        self.total += 1
        self.by_kind[kind] += 1
        now = self.clock()
        last = self._last_warning.get(kind)
        if last is not None and now - last < self.interval:
            self._suppressed[kind] += 1
            return
        self._last_warning[kind] = now
        suppressed = self._suppressed.pop(kind, 0)
        more = f" ({suppressed} more since the last warning)" if suppressed else ""
        self.log.warning("%s refused (%s): %s%s", self.what, kind, _short(detail), more)


def _short(detail: object, limit: int = 200) -> str:
    text = str(detail) if isinstance(detail, str | BaseException) else repr(detail)
    return text if len(text) <= limit else text[: limit - 1] + "…"
