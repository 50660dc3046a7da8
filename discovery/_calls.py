"""Calling the registry's function library, and checking every entry that comes back."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.client import NEVER_DECODE

from bus.rejects import Rejects

from ._grants import MAX_GRANTS, Grants, parse_grants
from ._library import call_function, call_with_library
from ._records import RegistryKeys
from ._validate import FIELDS, Invalid, parse_instance
from .errors import library_missing, redis_errors
from .profile import AgentProfile

__all__ = ["GRANTS_REFRESH", "LibraryCalls"]

log = logging.getLogger("a2a.discovery.registry")

_WARN_EVERY = 10.0
GRANTS_REFRESH = 10.0
"""Seconds a registry goes on with the roster's grants it read before reading them again."""
GRANTS_RECHECK = 1.0
"""After an entry was refused for its grant, the grants are read again this soon (they may
have just been widened)."""


class LibraryCalls:
    """The registry's round trips (pipelined FCALLs, FCALL_RO reads) and the validation of
    their answers: nothing read back is trusted (``discovery._validate``), and an instance
    whose agent may not advertise what it does (``discovery._grants``) is skipped too; both
    are counted in :attr:`rejected`."""

    def __init__(self, redis: aioredis.Redis, keys: RegistryKeys) -> None:
        self.redis = redis
        self.keys = keys
        self.rejects = Rejects(log, "registry entry")
        self._warned = -math.inf
        self._grants = Grants()
        self._grants_read = -math.inf
        self._grants_doubted = False

    @property
    def rejected(self) -> int:
        """Invalid entries skipped so far."""
        return self.rejects.total

    @property
    def granted(self) -> Grants:
        """The roster's grants as last read by :meth:`grants` (no I/O)."""
        return self._grants

    async def grants(self) -> Grants:
        """What the roster lets each agent advertise (``discovery._grants``), read again every
        ``GRANTS_REFRESH`` seconds (``GRANTS_RECHECK`` after an entry was refused for its
        grant); an open deployment has none. The object stays the same while they do not
        change, so a reader can tell a change by identity."""
        age = time.monotonic() - self._grants_read
        if age >= GRANTS_REFRESH or (self._grants_doubted and age >= GRANTS_RECHECK):
            with redis_errors("reading the roster's grants"):
                size = await self.redis.hlen(self.keys.grants)
                raw: dict[Any, Any] = {}
                if 0 < size <= MAX_GRANTS:
                    raw = await self.redis.execute_command(  # type: ignore[no-untyped-call]
                        "HGETALL", self.keys.grants, **{NEVER_DECODE: True}
                    )
                elif size:
                    raw = {"*": b""}  # too many to read: nothing is granted
            fresh = parse_grants(raw)
            self._grants_read, self._grants_doubted = time.monotonic(), False
            if fresh == self._grants:
                return self._grants
            self._grants = fresh
            for agent in fresh.invalid:
                self.rejects(
                    "grant", f"the roster's grant of {agent!r} does not decode: it is granted nothing"
                )
        return self._grants

    # -- calling the library ---------------------------------------------------------

    async def _pipelined(
        self, commands: Sequence[tuple[Any, ...]], *, raise_on_error: bool = True
    ) -> list[Any]:
        """Send ``commands`` (FCALLs of the library, PEXPIREs) in one pipelined round trip.

        ``raise_on_error=False``: a command's error is its reply (except a missing library,
        which is loaded, and the commands sent again).
        """

        async def run() -> list[Any]:
            async with self.redis.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)
                replies: list[Any] = await pipe.execute(raise_on_error=raise_on_error)
            for reply in replies:
                if library_missing(reply):
                    raise reply
            return replies

        return await call_with_library(self.redis, run)

    async def _read(self, op: str, keys: list[str], args: list[Any]) -> Any:
        """FCALL_RO the read-only function of ``op``; the reply undecoded (bytes).

        FCALL_RO: Redis refuses any write from it, and ACL users with read-only rights
        on the keys (clients) may run it.
        """
        return await call_function(self.redis, op, keys, args, read_only=True, raw=True)

    # -- reading foreign bytes -------------------------------------------------------

    def _warn_bounded(self, message: str) -> None:
        now = time.monotonic()
        if now - self._warned >= _WARN_EVERY:
            self._warned = now
            log.warning("%s", message)

    def _profiles(self, flat: object) -> list[AgentProfile]:
        """Valid profiles of a flat answer: id, then its ``FIELDS`` fields, for each instance."""
        if not isinstance(flat, list):
            self.rejects("reply", f"expected a list, got {type(flat).__name__}")
            return []
        profiles = []
        for i in range(0, len(flat) - FIELDS, FIELDS + 1):
            profile = self._parse(flat[i], flat[i + 1 : i + 1 + FIELDS])
            if profile is not None:
                profiles.append(profile)
        return profiles

    def _parse(
        self, agent_id: str | bytes | None, fields: Sequence[str | bytes | int | None]
    ) -> AgentProfile | None:
        try:
            profile = parse_instance(agent_id, fields)
        except Invalid as exc:
            self.rejects(exc.kind, exc)
            return None
        if not self._grants.allows(profile):
            self._grants_doubted = True
            self.rejects(
                "grant", f"{profile.agent_id} advertises capabilities the roster does not grant its agent"
            )
            return None
        return profile
