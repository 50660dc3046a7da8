"""Waking the session loops of this process when their sessions change, here or in any other process.

Every change of a session is published (:meth:`SessionStore.events`). A loop waiting for
the person (a pause, a draft to approve) or watching a step for a stop sleeps until its
session changes, then reads it again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import anyio

from bus.errors import Unavailable

from .runner import SessionRunner
from .store import SessionStore

__all__ = ["RETRY", "wake_runners"]

log = logging.getLogger("a2a.sessions")

RETRY = 1.0
"""Seconds before following the events again after Redis failed."""


async def wake_runners(store: SessionStore, runners: Mapping[str, SessionRunner]) -> None:
    """Follow the session events until cancelled, waking the runner of each changed session.

    Events published while nobody follows are lost: once following (again), every runner is
    woken to read its session.
    """
    while True:
        try:
            async with store.events() as events:
                for runner in list(runners.values()):
                    runner.poke()
                async for event in events:
                    changed = runners.get(event.session.id)
                    if changed is not None:
                        changed.poke()
        except Unavailable as exc:
            log.warning("session events: %s; following again in %g s", exc, RETRY)
            await anyio.sleep(RETRY)
