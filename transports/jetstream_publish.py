"""Stored publishes on JetStream with their acks read by msgspec, and nats-py's errors as
TransportError: the hot path of every durable task's writes (``js.publish`` and
``kv.create`` of nats-py, without their dataclasses)."""

from __future__ import annotations

import asyncio
import itertools
from contextlib import suppress
from typing import Any

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from .errors import TransportError

__all__ = ["LAST_SUBJECT_SEQ", "WRONG_LAST", "PubAck", "Refused", "StoredPublisher", "jetstream_errors"]

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


class StoredPublisher:
    """Publishes to streams of one connection and waits for the server's acks, which come
    to one wildcard inbox subscription: a publish with a reply subject and a future each,
    not nats-py's ``request`` (a fresh inbox token, ``wait_for`` and its task each), which
    costs about twice the CPU. :meth:`start` before use.

    Only an ack is believed: an answer carrying a ``Nats-Stream`` header (a stored message
    that someone had the server send here) or one that is not an ack is an error.
    """

    def __init__(self, nc: Client, timeout: float = 5.0) -> None:
        self.nc = nc
        self.timeout = timeout
        self._prefix = ""
        self._tokens = itertools.count()
        self._waiting: dict[str, asyncio.Future[Msg]] = {}
        self._sub: Subscription | None = None

    async def start(self) -> None:
        if self._sub is None:
            self._prefix = f"{self.nc.new_inbox()}."
            self._sub = await self.nc.subscribe(f"{self._prefix}*", cb=self._answered)

    async def stop(self) -> None:
        """Stop hearing acks: publishes still waiting for one fail at once."""
        if self._sub is not None:
            with suppress(nats.errors.Error):
                await self._sub.unsubscribe()
            self._sub = None
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(TransportError("the store closed before the server's ack came"))

    async def _answered(self, msg: Msg) -> None:
        future = self._waiting.pop(msg.subject[len(self._prefix) :], None)
        if future is not None and not future.done():
            future.set_result(msg)

    async def publish(self, subject: str, data: bytes, headers: dict[str, str]) -> PubAck:
        """Publish to a stream and wait for the server's ack.

        Raises:
            Refused: the server refused it (its error code says why).
            TransportError: no stream takes the subject, no ack came in time, or the answer
                is no ack.
        """
        if self._sub is None:
            raise TransportError("stored publishes are not open (StoredPublisher.start)")
        token = str(next(self._tokens))
        future: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        timer = future.get_loop().call_later(self.timeout, _expire, future)
        try:
            await self.nc.publish(subject, data, reply=self._prefix + token, headers=headers)
            msg = await future
        finally:
            timer.cancel()
            self._waiting.pop(token, None)
        found = msg.headers
        if found:
            if found.get("Status") == "503":
                raise TransportError("no stream takes this subject")
            if "Nats-Stream" in found:
                raise TransportError("the answer to a stored publish is a stored message, not an ack")
        try:
            ack = _read_ack(msg.data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            raise TransportError("the server's answer to a stored publish is not an ack") from None
        if ack.error is not None:
            raise Refused(ack.error)
        return ack


def _expire(future: asyncio.Future[Msg]) -> None:
    if not future.done():
        future.set_exception(TransportError("no ack from the server in time"))


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
