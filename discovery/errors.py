"""redis-py errors, translated to A2A errors in this one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis.exceptions

from bus.errors import Unavailable

__all__ = ["redis_errors"]


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Re-raise redis-py failures as :class:`Unavailable` naming the operation."""
    try:
        yield
    except Unavailable:
        raise  # already ours (Unavailable is a ConnectionError, hence an OSError)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        raise Unavailable(f"registry unavailable during {what}: {exc}") from exc
    except redis.exceptions.RedisError as exc:
        raise Unavailable(f"registry error during {what}: {exc}") from exc
