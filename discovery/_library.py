"""Loading the registry's Redis function library, and calling it with one load-and-retry when missing.

A server started fresh, or restarted without persistence, has no functions. A user that
may load them (the default user of an open deployment, the admin) loads the library on
the first call that misses it; any other user gets :class:`bus.errors.Unavailable`
saying how to load it, and its next call (a heartbeat, a view's resync) tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.cluster import RedisCluster

from bus.errors import Unavailable

from ._scripts import LIBRARY, RETIRED, SOURCE

__all__ = ["LIBRARY", "call_with_library", "is_missing", "load_library"]

log = logging.getLogger("a2a.discovery.registry")

T = TypeVar("T")

LOAD_HINT = "run `a2a redis-config --roster ROSTER --load` with REDIS_URL naming the Redis admin user"


async def load_library(client: aioredis.Redis | RedisCluster) -> None:
    """Load (or replace) the registry's function library on the server ``client`` talks to
    (on every master, for a cluster client).

    Raises:
        Unavailable: this user may not load functions, or the server has none (before Redis 7).
    """
    options: dict[str, Any] = {}
    try:
        if isinstance(client, RedisCluster):
            await client.initialize()
            options["target_nodes"] = client.get_primaries()
        await client.execute_command("FUNCTION", "LOAD", "REPLACE", SOURCE, **options)
        for retired in RETIRED:
            # Older layouts do not check what the roster grants: their functions now refuse
            # (runtimes of a namespace upgrade together).
            await client.execute_command("FUNCTION", "LOAD", "REPLACE", retired, **options)
    except redis.exceptions.NoPermissionError:
        raise Unavailable(
            f"the registry's Redis functions ({LIBRARY}) are not loaded and this Redis user may not "
            f"load them: {LOAD_HINT}"
        ) from None
    except redis.exceptions.ResponseError as exc:
        raise Unavailable(
            f"could not load the registry's Redis functions ({LIBRARY}; Redis 7+ needed): {exc}"
        ) from exc
    log.info("loaded the registry's Redis functions (%s)", LIBRARY)


def is_missing(exc: redis.exceptions.ResponseError) -> bool:
    """Whether the error says the library's functions are not loaded."""
    return "function not found" in str(exc).lower()


async def call_with_library(client: aioredis.Redis, run: Callable[[], Awaitable[T]]) -> T:
    """``run()``, which calls the library's functions; when they are missing, load them and run again."""
    try:
        return await run()
    except redis.exceptions.ResponseError as exc:
        if not is_missing(exc):
            raise
    await load_library(client)
    return await run()
