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
from redis.asyncio.cluster import RedisCluster
from redis.client import NEVER_DECODE

from bus.errors import Unavailable

from ._scripts import FUNCTIONS, LIBRARY, RETIRED, SOURCE
from .errors import AccessDenied, ErrorReply, LibraryMissing, library_errors, redis_errors

__all__ = ["LIBRARY", "call_function", "call_with_library", "load_library"]

log = logging.getLogger("a2a.discovery.registry")

T = TypeVar("T")

LOAD_HINT = "run `a2a redis-config --roster ROSTER --load` with REDIS_URL naming the Redis admin user"


async def load_library(client: aioredis.Redis | RedisCluster) -> None:
    """Load (or replace) the registry's function library on the server ``client`` talks to
    (on every master, for a cluster client).

    Raises:
        Unavailable: this user may not load functions, the server has none (before Redis 7),
            or it could not be reached.
    """
    options: dict[str, Any] = {}
    try:
        with redis_errors("loading the registry's functions"):
            if isinstance(client, RedisCluster):
                await client.initialize()
                options["target_nodes"] = client.get_primaries()
            await client.execute_command("FUNCTION", "LOAD", "REPLACE", SOURCE, **options)
            for retired in RETIRED:
                # Older layouts do not check what the roster grants: their functions now refuse
                # (runtimes of a namespace upgrade together).
                await client.execute_command("FUNCTION", "LOAD", "REPLACE", retired, **options)
    except AccessDenied:
        raise Unavailable(
            f"the registry's Redis functions ({LIBRARY}) are not loaded and this Redis user may not "
            f"load them: {LOAD_HINT}"
        ) from None
    except ErrorReply as exc:
        raise Unavailable(
            f"could not load the registry's Redis functions ({LIBRARY}; Redis 7+ needed): {exc.reply}"
        ) from exc
    log.info("loaded the registry's Redis functions (%s)", LIBRARY)


async def call_with_library(client: aioredis.Redis, run: Callable[[], Awaitable[T]]) -> T:
    """``run()``, which calls the library's functions; when they are missing, load them and run again.

    Errors other than the missing library are raised as they came (the caller's
    ``redis_errors`` names its operation), and so are those of the second run.
    """
    try:
        with library_errors():
            return await run()
    except LibraryMissing:
        pass
    await load_library(client)
    return await run()


async def call_function(
    client: aioredis.Redis,
    op: str,
    keys: list[str],
    args: list[Any],
    *,
    read_only: bool = False,
    raw: bool = False,
) -> Any:
    """FCALL (``read_only``: FCALL_RO) the library's function ``op``, loading the library
    first when the server has none; ``raw``: the reply undecoded (bytes), whatever the
    client decodes. Errors are redis-py's, for the caller's ``redis_errors``."""
    command = "FCALL_RO" if read_only else "FCALL"
    options = {NEVER_DECODE: True} if raw else {}

    def run() -> Awaitable[Any]:
        return client.execute_command(command, FUNCTIONS[op], len(keys), *keys, *args, **options)  # type: ignore[no-untyped-call]

    return await call_with_library(client, run)
