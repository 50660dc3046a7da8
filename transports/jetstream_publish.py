"""Stored publishes on JetStream with their acks read by msgspec, and nats-py's errors as
TransportError: the hot path of every durable task's writes (``js.publish`` and
``kv.create`` of nats-py, without their dataclasses)."""

from __future__ import annotations

from typing import Any

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client

from .errors import TransportError

__all__ = ["LAST_SUBJECT_SEQ", "WRONG_LAST", "PubAck", "Refused", "jetstream_errors", "stored_publish"]

LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"

WRONG_LAST = frozenset({10071, 10164})
"""The server's codes for a write refused because the subject's last sequence differs."""


class ApiError(msgspec.Struct):
    code: int = 0
    err_code: int = 0
    description: str = ""


class PubAck(msgspec.Struct):
    """The server's answer to a stored publish (nats-py's PubAck, read without its dataclass)."""

    seq: int = 0
    duplicate: bool = False
    error: ApiError | None = None


_read_ack = msgspec.json.Decoder(PubAck).decode


class Refused(Exception):
    """The server refused a stored publish; ``err_code`` says why (JetStream's error codes)."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.description or f"JetStream error {error.err_code}")
        self.err_code = error.err_code


async def stored_publish(nc: Client, subject: str, data: bytes, headers: dict[str, str]) -> PubAck:
    """Publish to a stream and wait for the server's ack.

    Raises:
        Refused: the server refused it (its error code says why).
        TransportError: no stream takes the subject, or the answer is no ack.
    """
    try:
        msg = await nc.request(subject, data, timeout=5.0, headers=headers)
    except nats.errors.NoRespondersError:
        raise TransportError("no stream takes this subject") from None
    try:
        ack = _read_ack(msg.data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        raise TransportError("the server's answer to a stored publish is not an ack") from None
    if ack.error is not None:
        raise Refused(ack.error)
    return ack


class jetstream_errors:
    """nats-py's errors as TransportError (the one edge of this module; a class, not a
    generator: it wraps every store operation)."""

    __slots__ = ("doing",)

    def __init__(self, doing: str) -> None:
        self.doing = doing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            return
        if isinstance(exc, nats.js.errors.InvalidKeyError):
            raise ValueError(str(exc) or "invalid key") from None
        if isinstance(exc, (nats.errors.Error, OSError, Refused)):
            raise TransportError(f"JetStream failed {self.doing}: {exc or type(exc).__name__}") from exc
