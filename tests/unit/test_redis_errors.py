"""The one edge between redis-py and the project: which redis-py error becomes which A2A error."""

from __future__ import annotations

import pytest
import redis.exceptions as rx

from bus.errors import Unavailable
from discovery.errors import (
    AccessDenied,
    ErrorReply,
    LibraryMissing,
    RegistrationRefused,
    WriteConflict,
    is_redis_error,
    library_errors,
    library_missing,
    redis_errors,
)


def translated(error: BaseException) -> BaseException:
    with pytest.raises(BaseException) as caught, redis_errors("heartbeat"):
        raise error
    return caught.value


@pytest.mark.parametrize(
    "error",
    [rx.ConnectionError("Connection closed by server."), rx.TimeoutError("Timeout"), OSError("reset")],
)
def test_a_lost_or_silent_server_is_unavailable(error: Exception) -> None:
    mapped = translated(error)
    assert type(mapped) is Unavailable and mapped.__cause__ is error
    assert mapped.message == f"registry unavailable during heartbeat: {error}"


def test_a_registration_refused_by_the_functions_names_the_reason_alone() -> None:
    error = rx.ResponseError("Command # 1 (FCALL ...) of pipeline caused error: refused: 2 instances')")
    mapped = translated(error)
    assert type(mapped) is RegistrationRefused and mapped.__cause__ is None
    assert mapped.message == "the registry refused heartbeat: 2 instances"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (rx.NoPermissionError("this user has no permissions to run the 'fcall' command"), AccessDenied),
        (rx.ResponseError("ERR The user executing the script can't run this command"), AccessDenied),
        (rx.ResponseError("ERR Function not found"), LibraryMissing),
        (rx.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"), ErrorReply),
    ],
)
def test_an_error_reply_is_typed_by_what_it_says(error: rx.ResponseError, kind: type[ErrorReply]) -> None:
    mapped = translated(error)
    assert type(mapped) is kind and isinstance(mapped, Unavailable) and mapped.__cause__ is error
    assert mapped.message == f"registry error during heartbeat: {error}"
    assert isinstance(mapped, ErrorReply) and mapped.reply == str(error)


def test_a_watched_key_changed_is_a_write_conflict() -> None:
    mapped = translated(rx.WatchError("Watched variable changed."))
    assert type(mapped) is WriteConflict and isinstance(mapped, Unavailable)


def test_other_redis_errors_are_unavailable_and_ours_or_foreign_ones_pass_unchanged() -> None:
    assert type(translated(rx.DataError("bad argument"))) is Unavailable
    ours = AccessDenied("already translated")
    assert translated(ours) is ours
    foreign = ValueError("not Redis")
    assert translated(foreign) is foreign


def test_library_errors_types_the_missing_library_only() -> None:
    with pytest.raises(LibraryMissing) as caught, library_errors():
        raise rx.ResponseError("ERR Function not found")
    assert caught.value.reply == "ERR Function not found"
    other = rx.ResponseError("ERR something else")
    with pytest.raises(rx.ResponseError) as raw, library_errors():
        raise other
    assert raw.value is other  # left for the operation's redis_errors to name


def test_the_predicates() -> None:
    assert library_missing(rx.ResponseError("ERR Function not found"))
    assert not library_missing(b"Function not found") and not library_missing(rx.ResponseError("ERR x"))
    assert is_redis_error(rx.ConnectionError("x")) and not is_redis_error(Unavailable("x"))
