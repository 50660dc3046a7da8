"""A caller's retry policy (seed 004's retry handling): the errors safe to send again, and
the back-off between attempts, all within the call's one deadline.

Only errors that mean the request was not handled are retried by default: OVERLOADED (the
callee refused it for now), NO_RESPONDERS (nobody serves the target right now) and
UNAVAILABLE (the message server could not take it). AGENT_LOST (the instance died while
handling it: the work may have been done) is retried only when the policy names it, for
calls the callee makes idempotent. Each attempt is a new request with a new id.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import msgspec

from bus.errors import A2AError

__all__ = ["SAFE_TO_RETRY", "Retry", "retried"]

T = TypeVar("T")
OptionsT = TypeVar("OptionsT", bound=msgspec.Struct)  # a call's options (:class:`a2a.CallOptions`)

SAFE_TO_RETRY = ("OVERLOADED", "NO_RESPONDERS", "UNAVAILABLE")
"""Codes of errors whose request was not handled: sending it again does nothing twice."""


class Retry(msgspec.Struct, frozen=True, kw_only=True):
    """Send a call again after an error in ``on``, up to ``attempts`` in all, waiting
    ``backoff`` seconds, doubled each time up to ``max_backoff`` (with jitter), as long as
    the call's deadline leaves time for it."""

    attempts: int = 3
    backoff: float = 0.1
    max_backoff: float = 2.0
    on: tuple[str, ...] = SAFE_TO_RETRY

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("Retry.attempts: at least 1")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("Retry.backoff and max_backoff: not negative")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1, 2, ...), with jitter."""
        base = min(self.max_backoff, self.backoff * float(2 ** (attempt - 1)))
        return base * random.uniform(0.5, 1.0)


async def retried(
    retry: Retry,
    options: OptionsT,
    limit: float,
    clock: Callable[[], float],
    attempt: Callable[[OptionsT], Awaitable[T]],
) -> T:
    """``attempt(options)``, again after each error ``retry`` names, until it succeeds, the
    attempts are spent or the deadline (``limit`` seconds from now) leaves no time for one
    more; each later attempt has the time left and a new request id.

    Raises:
        A2AError: the last attempt's error.
    """
    deadline = clock() + limit
    tries = 0
    while True:
        tries += 1
        try:
            return await attempt(options)
        except A2AError as exc:
            delay = retry.delay(tries)
            left = deadline - clock() - delay
            if exc.code not in retry.on or tries >= retry.attempts or left <= 0.01:
                raise
        await anyio.sleep(delay)
        options = msgspec.structs.replace(options, timeout=left, request_id=None)
