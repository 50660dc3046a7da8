"""redis-py errors, translated to A2A errors in this one place.

Every call into redis-py runs under :func:`redis_errors` (or inside a function that does),
so callers see :class:`bus.errors.Unavailable` and its subclasses, never redis-py's own:

    Unavailable                  Redis could not be reached, timed out, or failed otherwise
    ├── WriteConflict            a watched key changed before EXEC: nothing was written
    └── ErrorReply               the server answered a command with an error
        ├── RegistrationRefused  the registry's functions refused an instance
        ├── AccessDenied         this Redis user may not run the command (its ACL)
        └── LibraryMissing       the registry's functions are not loaded on the server

No other module imports ``redis.exceptions`` but ``discovery.cluster``: a redis-py
connection class beneath this edge, which answers redis-py's retries in redis-py's terms.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis.exceptions

from bus.errors import Unavailable

__all__ = [
    "AccessDenied",
    "ErrorReply",
    "LibraryMissing",
    "RegistrationRefused",
    "WriteConflict",
    "is_redis_error",
    "library_errors",
    "library_missing",
    "redis_errors",
]

_REFUSED = "refused: "
"""How the registry's functions begin the message of a registration they refuse."""


class WriteConflict(Unavailable):
    """A key watched by a transaction changed (or its connection was lost) before EXEC: the
    transaction did not run, and may be tried again."""


class ErrorReply(Unavailable):
    """The server answered a command with an error (``reply``, as the server put it)."""

    def __init__(self, message: str, *, reply: str = "") -> None:
        super().__init__(message)
        self.reply = reply


class RegistrationRefused(ErrorReply):
    """The registry refused an instance: the roster does not let its agent advertise a
    capability it declares, or its agent already runs the most instances it may."""


class AccessDenied(ErrorReply):
    """This Redis user may not run the command, or a command the called function runs."""


class LibraryMissing(ErrorReply):
    """The server has no registry functions (started fresh, or restarted without persistence)."""


def library_missing(reply: object) -> bool:
    """Whether ``reply`` (a command's error, raised or returned by a pipeline) says the
    registry's functions are not loaded."""
    return isinstance(reply, redis.exceptions.ResponseError) and "function not found" in str(reply).lower()


def is_redis_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of redis-py's own errors, which no :func:`redis_errors` translated."""
    return isinstance(exc, redis.exceptions.RedisError)


@contextmanager
def redis_errors(what: str) -> Iterator[None]:
    """Re-raise redis-py failures as :class:`Unavailable` (or a subclass above) naming the operation."""
    try:
        yield
    except Unavailable:
        raise  # already ours (Unavailable is a ConnectionError, hence an OSError)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        raise Unavailable(f"registry unavailable during {what}: {exc}") from exc
    except redis.exceptions.WatchError as exc:
        raise WriteConflict(f"registry error during {what}: {exc}") from exc
    except redis.exceptions.ResponseError as exc:
        error = _reply_error(what, exc)
        # A refusal says all there is to say: no redis-py traceback behind it.
        raise error from (None if isinstance(error, RegistrationRefused) else exc)
    except redis.exceptions.RedisError as exc:
        raise Unavailable(f"registry error during {what}: {exc}") from exc
    except UnicodeDecodeError as exc:  # a client that decodes replies met bytes that are no text
        raise Unavailable(f"registry error during {what}: a reply holds bytes that are not UTF-8") from exc


@contextmanager
def library_errors() -> Iterator[None]:
    """Re-raise a reply saying the registry's functions are not loaded as :class:`LibraryMissing`.

    Any other error goes on as it came, for the :func:`redis_errors` of the operation to name.
    """
    try:
        yield
    except redis.exceptions.ResponseError as exc:
        if not library_missing(exc):
            raise
        raise LibraryMissing(f"the registry's functions are not loaded: {exc}", reply=str(exc)) from exc


def _reply_error(what: str, exc: redis.exceptions.ResponseError) -> ErrorReply:
    text = str(exc)
    at = text.find(_REFUSED)
    if at >= 0:  # (a pipeline's error names the command first: the reason follows)
        reason = text[at + len(_REFUSED) :].rstrip("',)\"")
        return RegistrationRefused(f"the registry refused {what}: {reason}", reply=text)
    kind = ErrorReply
    if library_missing(exc):
        kind = LibraryMissing
    elif isinstance(exc, redis.exceptions.NoPermissionError) or "can't run this command" in text:
        kind = AccessDenied  # (a function's own command refused: an error reply of no special class)
    return kind(f"registry error during {what}: {exc}", reply=text)
