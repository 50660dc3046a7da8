"""The registry's sweeper, taken in turns by views: one at a time holds its lease and calls it."""

from __future__ import annotations

import contextlib
import logging
import random
import time

import anyio

from bus.errors import Unavailable

from .errors import AccessDenied
from .registry import Registry

__all__ = ["SWEEP_EVERY", "take_turns"]

log = logging.getLogger("a2a.discovery.view")

SWEEP_EVERY = 60.0
"""Least time, in seconds, between the sweeper's passes over the whole ``instances`` set."""


async def take_turns(registry: Registry, sweeper_id: str) -> None:
    """Take turns at the registry's sweeper: call it as expiries come due while holding its lease.

    The holder calls again when the next instance expires, and at least four times per
    heartbeat interval (instances of runtimes with shorter intervals expire sooner); the
    others when the lease ends. A user that may not write the registry (a client) gets
    an error and tries again a minute later. The holder also passes over the whole
    ``instances`` set once a minute (``Registry.sweep``) for ids no expiry names.
    """
    interval = registry.heartbeat_interval
    last_pass = time.monotonic()
    while True:
        try:
            expiry = await registry.expire_due(sweeper_id, registry.ttl)
        except Unavailable as exc:
            log.debug("sweeper call failed: %s", exc)
            wait = SWEEP_EVERY if isinstance(exc, AccessDenied) else interval
        else:
            if expiry.held:
                wait = interval / 4 if expiry.wait is None else min(expiry.wait, interval / 4)
                if time.monotonic() - last_pass >= max(SWEEP_EVERY, 10 * registry.ttl):
                    last_pass = time.monotonic()
                    with contextlib.suppress(Unavailable):
                        await registry.sweep()
            else:
                wait = min(interval, expiry.wait or interval) * (1 + 0.1 * random.random())
        await anyio.sleep(max(wait, 0.005))
