"""The durable store as the task protocol uses it: encoding, and store errors as Unavailable."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import msgspec

from transports import MessageTooLarge, TransportError
from transports.durable import Delivery, DurableStore, Notice

from ..errors import InvalidParams, PayloadTooLarge, Unavailable

__all__ = ["TaskStore", "decode"]

T = TypeVar("T")

_encode = msgspec.json.Encoder().encode


class _unavailable:
    """Store errors as A2A errors (a class, not a generator: it wraps every store operation)."""

    __slots__ = ("doing",)

    def __init__(self, doing: str) -> None:
        self.doing = doing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            return
        if isinstance(exc, MessageTooLarge):
            raise PayloadTooLarge(f"the task store refused {self.doing}: {exc}") from None
        if isinstance(exc, TransportError):
            raise Unavailable(f"the task store failed {self.doing}: {exc}") from None
        if isinstance(exc, ValueError):  # a key or value the store cannot take
            raise InvalidParams(f"the task store refused {self.doing}: {exc}") from None


class TaskStore:
    """A :class:`transports.durable.DurableStore` with typed values and A2A errors (Unavailable)."""

    def __init__(self, store: DurableStore) -> None:
        self.raw = store

    async def enqueue(self, subject: str, msg_id: str, value: Any, *, ttl: float | None) -> int:
        with _unavailable("storing a task"):
            return await self.raw.enqueue(subject, msg_id, _encode(value), ttl=ttl)

    async def take(self, consumer: str, subject: str, *, max_items: int, timeout: float) -> list[Delivery]:
        with _unavailable("taking tasks"):
            return await self.raw.take(consumer, subject, max_items=max_items, timeout=timeout)

    async def stop_taking(self, consumer: str, subject: str) -> list[Delivery]:
        with _unavailable("stopping taking tasks"):
            return await self.raw.stop_taking(consumer, subject)

    async def create(self, key: str, value: Any) -> bool:
        with _unavailable("writing a task's record"):
            return await self.raw.create(key, _encode(value))

    async def put(self, key: str, value: Any) -> None:
        with _unavailable("writing a task's record"):
            await self.raw.put(key, _encode(value))

    async def delete(self, key: str) -> None:
        with _unavailable("removing a task's record"):
            await self.raw.delete(key)

    async def get(self, key: str, kind: type[T]) -> T | None:
        """The value of ``key`` as ``kind``; None when missing (or unreadable: counted as missing)."""
        with _unavailable("reading a task's record"):
            data = await self.raw.get(key)
        return None if data is None else decode(data, kind)

    async def keys(self, pattern: str) -> list[str]:
        with _unavailable("listing tasks"):
            return await self.raw.keys(pattern)

    async def listen(self, family: str) -> None:
        with _unavailable("listening for task updates"):
            await self.raw.listen(family)

    def heard(self, key: str, family: str, after: int) -> tuple[bool, bytes | None]:
        return self.raw.heard(key, family, after)

    def watch(self, key: str, *, family: str | None = None) -> AbstractAsyncContextManager[Notice]:
        return self.raw.watch(key, family=family)


def decode(data: bytes, kind: type[T]) -> T | None:
    """``data`` as ``kind``, or None when it is not one (counted as missing)."""
    try:
        return msgspec.json.decode(data, type=kind)
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
        return None
