"""Which servers a command uses, said where it is not obvious, and a Redis that will not do, in one line.

Settings come from the command's options, then the environment, then the dev cluster file
of a running ``a2a up``, then the defaults (``a2a.core.settings``). A command that falls
back to a default server says so on standard error (a default port may be anybody's), as
it does when it ignores the file of an ``a2a up`` that is gone.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import anyio

if TYPE_CHECKING:
    from ..core.settings import Settings

__all__ = ["LOOK_AFTER", "check_redis_for_serving", "redis_reason", "resolve_settings", "using_redis"]

T = TypeVar("T")
LOOK_AFTER = 0.3
"""Seconds a Redis command may take before the server is looked at (most take a millisecond)."""


def _note(args: argparse.Namespace, text: str) -> None:
    sys.stderr.write(f"a2a {getattr(args, 'command', '')}: {text}\n".replace("a2a : ", "a2a: "))
    sys.stderr.flush()


def resolve_settings(args: argparse.Namespace, **extra: Any) -> Settings:
    """Settings for the command, as :func:`a2a.cli.common.settings_from` documents; says which
    default server it uses, if any, and that it ignores a dev cluster file whose ``a2a up`` is gone."""
    from ..core.settings import Settings, read_dev_cluster

    nats_given = bool(getattr(args, "nats_url", None) or os.environ.get("NATS_URL"))
    redis_given = bool(getattr(args, "redis_url", None) or os.environ.get("REDIS_URL"))
    found = None if nats_given else read_dev_cluster()  # ValueError naming the file: exit 2
    if found is not None and not found.running:
        _note(args, f"ignoring {found.path}: the a2a up that wrote it (pid {found.pid}) is gone")
    settings = Settings.from_env(
        nats_url=getattr(args, "nats_url", None),
        redis_url=getattr(args, "redis_url", None),
        namespace=getattr(args, "namespace", None),
        **extra,
    )
    cluster = found is not None and found.running
    defaults = [] if nats_given or cluster else [f"NATS {settings.nats_url}"]
    if not (redis_given or cluster) and settings.redis_url:
        defaults.append(f"Redis {settings.redis_url}")
    if defaults:
        where = (
            "no --nats-url, NATS_URL or running 'a2a up'" if not nats_given else "no --redis-url or REDIS_URL"
        )
        _note(args, f"using the default {' and '.join(defaults)} ({where})")
    return settings


def _address(url: str) -> tuple[str, int] | None:
    """Host and port of a Redis URL (the first seed of a cluster's); None for a socket path."""
    if "+cluster://" in url:
        from discovery.cluster import parse_cluster_url

        seeds = parse_cluster_url(url)[0]
        return seeds[0] if seeds else None
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        return None
    return parts.hostname, parts.port or 6379


async def redis_reason(url: str) -> str | None:
    """Why the server at ``url`` is no Redis to use, heard from it; None when it answers as Redis."""
    from ..core.connect import listen_to

    address = _address(url)
    if address is None:
        return None
    heard = await listen_to(*address)
    return None if heard.kind == "redis" else heard.describe("Redis")


async def check_redis_for_serving(args: argparse.Namespace, url: str | None) -> None:
    """Before agents are served: a Redis URL that another protocol answers is an error (UNAVAILABLE);
    one that nothing answers yet is said once, and the agents are served by name until it does."""
    from bus.errors import Unavailable

    reason = await redis_reason(url) if url else None
    if reason is None:
        return
    assert url is not None
    if reason.startswith("not a Redis server"):
        raise Unavailable(f"cannot use Redis at {_shown(url)}: {reason}")
    _note(args, f"Redis at {_shown(url)}: {reason}; serving by name until it answers")


def _shown(url: str) -> str:
    return re.sub(r"//[^@/]*@", "//***@", url)


async def using_redis(url: str, work: Callable[[], Awaitable[T]]) -> T:
    """``work``, done with the Redis at ``url``; a failure that is the server's (none there, another
    protocol, no answer) ends it as ``Unavailable`` saying so, as soon as the server is heard."""
    from bus.errors import Unavailable

    done: list[T] = []
    failed: list[BaseException] = []

    async def run(scope: anyio.CancelScope) -> None:
        try:
            done.append(await work())
        except Unavailable as exc:
            reason = await redis_reason(url)
            failed.append(Unavailable(f"cannot use Redis at {_shown(url)}: {reason}") if reason else exc)
        except Exception as exc:
            failed.append(exc)
        scope.cancel()

    async def look(scope: anyio.CancelScope) -> None:
        await anyio.sleep(LOOK_AFTER)
        reason = await redis_reason(url)
        if reason is not None:
            failed.append(Unavailable(f"cannot use Redis at {_shown(url)}: {reason}"))
            scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, tg.cancel_scope)
        tg.start_soon(look, tg.cancel_scope)
    if done:
        return done[0]
    if failed:
        raise failed[0]
    raise Unavailable(f"cannot use Redis at {_shown(url)}: cancelled")
