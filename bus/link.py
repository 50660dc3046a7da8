"""One transport as both halves of the protocol use it: encoding, publishing, local delivery.

This is the edge where transport errors become A2A errors (``PAYLOAD_TOO_LARGE``,
``UNAVAILABLE``), and where a message for a subscriber in this very process is handed
over directly instead of crossing the message server (seed 004's ``routeLocally``). A
local hand-over carries the same bytes a remote one would, so the receiver decodes,
validates and checks them exactly as it does a message from the network.

It is also where replies to other runtimes are batched (see :meth:`Link.reply_soon` and
``bus/protocol.py``).
"""

from __future__ import annotations

import asyncio
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
from .errors import A2AError, PayloadTooLarge, Unavailable
from .protocol import REPLIES_HEADER
from .subjects import Subjects
from .tasks import TaskSet
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
        self._batches: dict[str, _Batch] = {}
        self._flushing = TaskSet()
        self.replies_lost = 0
        """Batched replies the transport refused (each logged)."""

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

    # -- replies -------------------------------------------------------------------------

    async def reply(self, subject: str, data: bytes, *, batch: bool = False) -> None:
        """Publish a reply; with ``batch``, it may travel in a reply batch.

        ``batch`` is for replies to another runtime whose request set ``batchReplies``
        (a caller in this process gets its reply directly). Per calling runtime, the
        first reply in a turn of the event loop is published at once; the others ready
        in that turn are collected and published as one message (``bus/protocol.py``)
        at the start of the next turn, before the transport writes what the first one
        queued. No reply waits longer than it would alone, and under load a callee
        answering many calls from one runtime publishes twice per turn instead of once
        per reply, so the server and that runtime each handle two messages, not dozens.

        Raises:
            PayloadTooLarge, Unavailable: as :meth:`publish` (a batched reply that cannot
                be published is logged and counted in ``replies_lost`` instead).
        """
        if not batch or subject.startswith(self._local_prefix) or self._flushing.closed:
            await self.publish(subject, data)
            return
        cut = subject.rfind(".") + 1
        key = subject[:cut]
        batches = self._batches
        pending = batches.get(key)
        if pending is None:  # the first reply to that runtime in this turn goes now
            if not batches:
                asyncio.get_running_loop().call_soon(self._flush_replies)  # before the transport writes
            batches[key] = _Batch(key)
            await self.publish(subject, data)
            return
        token = subject[cut:].encode()
        size = len(token) + len(data) + 2
        if pending.size + size + _HEADER_ROOM > self.max_payload:
            self._send(pending)  # full: it goes now, a new batch collects the rest
            pending = batches[key] = _Batch(key)
        pending.lines.append(token + b" " + data)
        pending.size += size

    def _flush_replies(self) -> None:
        batches, self._batches = self._batches, {}
        for pending in batches.values():
            self._send(pending)

    def _send(self, pending: _Batch) -> None:
        """Hand a batch to the transport now (this turn), finishing in a task if it must wait.

        It goes on the reply subject of its first reply; a batch of one is that reply.
        """
        lines = pending.lines
        if not lines:
            return
        first = lines[0]
        space = first.index(b" ")
        subject = pending.prefix + first[:space].decode()
        if len(lines) == 1:
            publish = self._publish_replies(subject, first[space + 1 :], 1)
        else:
            publish = self._publish_replies(subject, b"\n".join(lines), len(lines))
        self._flushing.start_now(publish)

    async def _publish_replies(self, subject: str, data: bytes, count: int) -> None:
        headers = {REPLIES_HEADER: str(count)} if count > 1 else None
        try:
            await self.publish(subject, data, headers=headers)
        except A2AError as exc:
            self.replies_lost += count
            log.warning("%d replies to %s lost: %s", count, subject, exc)

    async def aclose(self) -> None:
        """Publish the replies still batched; stop what is still publishing after a moment."""
        self._flush_replies()
        await self._flushing.aclose()

    async def subscribe(self, subject: str, handler: MessageHandler, *, queue: str = "") -> Subscription:
        try:
            return await self.transport.subscribe(subject, handler, queue=queue)
        except TransportError as exc:
            raise Unavailable(f"cannot subscribe to {subject}: {exc}") from None


_HEADER_ROOM = 64
"""Bytes kept free in a batch for its header and framing."""


class _Batch:
    """Replies to one calling runtime (reply subjects starting with ``prefix``), as batch lines."""

    __slots__ = ("lines", "prefix", "size")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.lines: list[bytes] = []
        self.size = 0


def _too_large(size: int, limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"envelope of {size} bytes exceeds the {limit}-byte message limit",
        details={"size": size, "limit": limit},
    )
