"""One transport as both halves of the protocol use it: encoding, publishing, local delivery.

This is the edge where transport errors become A2A errors (``PAYLOAD_TOO_LARGE``,
``UNAVAILABLE``), and where a message for a subscriber in this very process is handed
over directly instead of crossing the message server (seed 004's ``routeLocally``). A
local hand-over carries the same bytes a remote one would, so the receiver decodes,
validates and checks them exactly as it does a message from the network.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from transports import (
    MemoryMessage,
    MessageHandler,
    MessageTooLarge,
    Subscription,
    Transport,
    TransportError,
)

from . import codec
from .errors import PayloadTooLarge, Unavailable
from .subjects import Subjects
from .wire import Envelope

__all__ = ["Link"]

log = logging.getLogger("a2a.bus")


class Link:
    """A transport, its namespace's subjects, and this process's own subscribers."""

    def __init__(self, transport: Transport, subjects: Subjects, *, max_payload: int | None = None) -> None:
        self.transport = transport
        self.subjects = subjects
        self._configured_limit = max_payload
        self.max_payload = self._limit()
        self._local: dict[str, MessageHandler] = {}
        self._local_prefix = "\0"
        self._local_prefix_handler: MessageHandler | None = None

    def _limit(self) -> int:
        limit = self.transport.max_payload
        return min(limit, self._configured_limit) if self._configured_limit else limit

    def refresh(self) -> None:
        """Re-read the server's message limit (after connecting to another server)."""
        self.max_payload = self._limit()

    # -- local subscribers ---------------------------------------------------------------

    def attach(self, subject: str, handler: MessageHandler) -> None:
        """Deliver what this process publishes on ``subject`` to ``handler`` directly."""
        self._local[subject] = handler

    def detach(self, subject: str) -> None:
        self._local.pop(subject, None)

    def attach_prefix(self, prefix: str, handler: MessageHandler) -> None:
        """Deliver what this process publishes on subjects starting with ``prefix`` (its replies)."""
        self._local_prefix, self._local_prefix_handler = prefix, handler

    def is_local(self, subject: str) -> bool:
        return subject in self._local

    # -- sending ---------------------------------------------------------------------------

    def encode(self, envelope: Envelope) -> bytes:
        """Encode, refusing what the server would refuse.

        Raises:
            PayloadTooLarge: the encoded envelope exceeds :attr:`max_payload`.
        """
        data = codec.encode_envelope(envelope)
        if len(data) > self.max_payload:
            raise _too_large(len(data), self.max_payload)
        return data

    async def publish(
        self,
        subject: str,
        data: bytes,
        *,
        reply: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Publish bytes (to a local subscriber directly when there is one).

        Raises:
            PayloadTooLarge: the message exceeds the server's limit.
            Unavailable: the message server cannot take it (closed, or disconnected
                with a full reconnect buffer).
        """
        handler = self._local.get(subject)
        if handler is None and subject.startswith(self._local_prefix):
            handler = self._local_prefix_handler
        if handler is not None:
            if len(data) > self.max_payload:
                raise _too_large(len(data), self.max_payload)
            try:
                await handler(MemoryMessage(subject, data, reply, headers))
            except Exception:  # as a transport does: a subscriber's bug is not the publisher's error
                log.exception("local subscriber failed on %s", subject)
            return
        try:
            await self.transport.publish(subject, data, reply=reply, headers=headers)
        except MessageTooLarge as exc:
            raise _too_large(exc.size, exc.limit) from None
        except TransportError as exc:
            raise Unavailable(f"message server unavailable: {exc}") from None

    async def subscribe(self, subject: str, handler: MessageHandler, *, queue: str = "") -> Subscription:
        try:
            return await self.transport.subscribe(subject, handler, queue=queue)
        except TransportError as exc:
            raise Unavailable(f"cannot subscribe to {subject}: {exc}") from None


def _too_large(size: int, limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"envelope of {size} bytes exceeds the {limit}-byte message limit",
        details={"size": size, "limit": limit},
    )
