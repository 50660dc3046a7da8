"""The transport contract: bytes in, bytes out, NATS subject semantics.

A transport publishes raw bytes on subjects, delivers messages to subscribers (one
member per queue group), and answers a request published to a subject nobody listens
on with a "no responders" status message (``Status: 503`` header) on its reply subject,
as nats-server does. Codecs, envelopes and correlation live in ``bus``.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "NO_RESPONDERS_STATUS",
    "Message",
    "MessageHandler",
    "Subscription",
    "Taker",
    "Transport",
    "TransportEvents",
    "is_no_responders",
]

NO_RESPONDERS_STATUS = "503"


class Message(Protocol):
    """A delivered message. nats-py's ``Msg`` satisfies this structurally."""

    @property
    def subject(self) -> str: ...
    @property
    def data(self) -> bytes: ...
    @property
    def reply(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str] | None: ...


MessageHandler = Callable[[Message], Awaitable[None]]
Taker = Callable[[Message], bool]
"""Takes a message at once (True), or leaves it to the subscription's handler (False)."""


def is_no_responders(msg: Message) -> bool:
    """True for the status message a server sends when a request had no subscriber."""
    headers = msg.headers
    return bool(headers) and not msg.data and headers.get("Status") == NO_RESPONDERS_STATUS  # type: ignore[union-attr]


class Subscription(abc.ABC):
    """Interest in a subject; ``unsubscribe`` stops delivery."""

    subject: str

    @abc.abstractmethod
    async def unsubscribe(self) -> None: ...

    async def drain(self) -> None:
        """Stop delivery, but first take what the server routed here before it knew (a
        request already on its way to this member of a queue group). As ``unsubscribe``
        where nothing can be on its way."""
        await self.unsubscribe()


@dataclass(frozen=True, slots=True)
class TransportEvents:
    """What a transport tells its owner, given to the transport when it is made."""

    permission_error: Callable[[str, str], None] | None = None
    """Called with ("Publish" | "Subscription", subject) when the server refuses one."""
    reconnected: Callable[[], Awaitable[object]] | None = None
    """Awaited after the connection came back (subscriptions already restored)."""


class Transport(abc.ABC):
    """A connection to a message server.

    Handlers passed to :meth:`subscribe` are awaited one message at a time per
    subscription, in a task the transport owns; a handler must hand slow work off.
    A server that refuses a publish or subscription for lack of permission does so
    asynchronously; the transport reports it to the :class:`TransportEvents` it was made with.
    """

    @abc.abstractmethod
    async def publish(
        self,
        subject: str,
        data: bytes,
        *,
        reply: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Publish ``data`` on ``subject``.

        Raises:
            MessageTooLarge: ``data`` exceeds :attr:`max_payload`.
            NotConnected: disconnected and the reconnect buffer is full.
            TransportClosed: the transport was closed.
        """

    @abc.abstractmethod
    async def subscribe(
        self, subject: str, handler: MessageHandler, *, queue: str = "", take: Taker | None = None
    ) -> Subscription:
        """Deliver messages matching ``subject`` to ``handler``.

        With ``queue``, each message goes to one member of the queue group. ``take`` is an
        optional shortcut for the common case: a transport may call it first, where it
        reads the message, and hand the message to ``handler`` only when it returns False.
        It must return at once and handle a message exactly as ``handler`` would (a
        transport may also never call it).
        """

    @abc.abstractmethod
    async def flush(self, timeout: float = 5.0) -> None:
        """Wait until everything published so far has reached the server."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Close the connection; later calls raise :class:`TransportClosed`."""

    @property
    @abc.abstractmethod
    def max_payload(self) -> int:
        """Largest message the server accepts, in bytes."""

    @property
    def is_connected(self) -> bool:
        """True while the connection to the server is up."""
        return True

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
