"""redis-py errors, translated to A2A errors in this one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis.exceptions

from bus.errors import Unavailable

__all__ = ["RegistrationRefused", "redis_errors"]

_REFUSED = "refused: "
"""How the registry's functions begin the message of a registration they refuse."""


class RegistrationRefused(Unavailable):
    """The registry refused an instance: the roster does not let its agent advertise a
    capability it declares, or its agent already runs the most instances it may."""


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Re-raise redis-py failures as :class:`Unavailable` naming the operation."""
    try:
        yield
    except Unavailable:
        raise  # already ours (Unavailable is a ConnectionError, hence an OSError)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        raise Unavailable(f"registry unavailable during {what}: {exc}") from exc
    except redis.exceptions.ResponseError as exc:
        text = str(exc)
        at = text.find(_REFUSED)
        if at >= 0:  # (a pipeline's error names the command first: the reason follows)
            reason = text[at + len(_REFUSED) :].rstrip("',)\"")
            raise RegistrationRefused(f"the registry refused {what}: {reason}") from None
        raise Unavailable(f"registry error during {what}: {exc}") from exc
    except redis.exceptions.RedisError as exc:
        raise Unavailable(f"registry error during {what}: {exc}") from exc
