"""One transport as both halves of the protocol use it: encoding, publishing, local delivery.

This is the edge where transport errors become A2A errors (``PAYLOAD_TOO_LARGE``,
``UNAVAILABLE``), and where a message for a subscriber in this very process is handed
over directly instead of crossing the message server (seed 004's ``routeLocally``). A
local hand-over carries the same bytes a remote one would, so the receiver decodes,
validates and checks them exactly as it does a message from the network.

It is also where replies to other runtimes are batched (see :meth:`Link.reply` and
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
    Taker,
    Transport,
    TransportError,
)

from . import codec
from .errors import A2AError, InvalidParams, PayloadTooLarge, Unavailable
from .protocol import REPLIES_HEADER
from .subjects import Subjects
from .tasks import TaskSet
from .wire import ELIDING_VERSION, PROTOCOL_VERSION, Envelope

__all__ = ["Link"]

log = logging.getLogger("a2a.bus")


_ELIDES = ("auto", ELIDING_VERSION)
"""``peer_protocol`` values under which compact messages leave out what 1.5 lets them."""


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
        self._flushing_started = False
        self._wakeup: asyncio.Future[None] | None = None
        """Set while the flush task waits for a turn with replies to batch."""
        self.replies_lost = 0
        """Batched replies the transport refused (each logged)."""
        self.peer_protocol = PROTOCOL_VERSION
        """``Settings.peer_protocol``: the form of requests (``bus.forms``) and of audit
        records (compact, ``bus.audit``, unless 1.3; with their conversation ids left out
        where 1.5 allows it unless 1.4)."""

    @property
    def elides(self) -> bool:
        """Whether compact messages (requests, audit records) leave out what 1.5 lets them:
        unless ``peer_protocol`` says the peers read 1.4 only (or the full form)."""
        return self.peer_protocol in _ELIDES

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

    def encode(self, envelope: Envelope, *, compact: bool = False) -> bytes:
        """Encode (a request in the compact form with ``compact``), refusing what the server would refuse.

        Raises:
            PayloadTooLarge: the encoded envelope exceeds :attr:`max_payload`.
            InvalidParams: something in it cannot be JSON (a lone surrogate in a string, say).
        """
        try:
            if compact:  # to a 1.5 reader unless this runtime was told its peers read 1.4 only
                data = codec.encode_compact(envelope, elide=self.elides)  # type: ignore[arg-type]
            else:
                data = codec.encode_envelope(envelope)
        except codec.ENCODE_ERRORS as exc:
            raise InvalidParams(f"the request cannot be encoded as JSON: {exc}"[:500]) from None
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

        ``batch`` is for a reply whose request set ``batchReplies``; it takes effect only on
        another runtime's reply subject (a caller in this process gets its reply directly).
        Per calling runtime, the first reply in a turn of the event loop is published at
        once; the others ready in that turn are collected and published as one message
        (``bus/protocol.py``) by this link's flush task, whose turn comes next, before the
        transport writes what the first reply queued. No reply waits longer than it would
        alone, and under load a callee answering many calls from one runtime publishes
        twice per turn instead of once per reply, so the server and that runtime each
        handle two messages, not dozens.

        Raises:
            PayloadTooLarge, Unavailable: as :meth:`publish` (a batched reply that cannot
                be published is logged and counted in ``replies_lost`` instead).
        """
        prefix = self.subjects.runtime_prefix(subject) if batch else None
        if prefix is None or subject.startswith(self._local_prefix) or self._flushing.closed:
            await self.publish(subject, data)
            return
        batches = self._batches
        pending = batches.get(prefix)
        if pending is None:  # the first reply to that runtime in this turn goes now
            first_of_turn = not batches
            batches[prefix] = _Batch(prefix)
            if first_of_turn:
                self._wake_flusher()  # before this publish asks the transport to write
            await self.publish(subject, data)
            return
        token = subject[len(prefix) :].encode()
        if pending.size + len(token) + len(data) + 2 + _HEADER_ROOM > self.max_payload:
            batches[prefix] = _Batch(prefix).add(token, data)  # this reply starts the next batch
            await self._publish_batch(pending)  # the full one goes now
            return
        pending.add(token, data)

    def _wake_flusher(self) -> None:
        waiter = self._wakeup
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(None)
        elif not self._flushing_started:
            self._flushing_started = True
            self._flushing.spawn(self._flush())

    async def _flush(self) -> None:
        """The flush task: publish the collected batches each time it is woken, until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            if not self._batches:
                self._wakeup = loop.create_future()
                try:
                    await self._wakeup
                finally:
                    self._wakeup = None
            batches, self._batches = self._batches, {}
            for pending in batches.values():
                await self._publish_batch(pending)

    async def _publish_batch(self, pending: _Batch) -> None:
        """Publish a batch on the reply subject of its first reply (a batch of one is that reply)."""
        lines = pending.lines
        if not lines:
            return
        first = lines[0]
        space = first.index(b" ")
        subject = pending.prefix + first[:space].decode()
        headers = None
        if len(lines) == 1:
            data = first[space + 1 :]
        else:
            data = b"\n".join(lines)
            headers = {REPLIES_HEADER: str(len(lines))}
        try:
            await self.publish(subject, data, headers=headers)
        except A2AError as exc:
            self.replies_lost += len(lines)
            log.warning("%d replies to %s lost: %s", len(lines), subject, exc)

    async def aclose(self) -> None:
        """Stop the flush task and publish what is still collected; later replies go out directly."""
        await self._flushing.aclose()
        batches, self._batches = self._batches, {}
        for pending in batches.values():
            await self._publish_batch(pending)

    async def subscribe(
        self, subject: str, handler: MessageHandler, *, queue: str = "", take: Taker | None = None
    ) -> Subscription:
        """Subscribe ``handler`` (``take``: see :meth:`transports.Transport.subscribe`)."""
        try:
            return await self.transport.subscribe(subject, handler, queue=queue, take=take)
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

    def add(self, token: bytes, data: bytes) -> _Batch:
        self.lines.append(token + b" " + data)
        self.size += len(token) + len(data) + 2
        return self


def _too_large(size: int, limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"envelope of {size} bytes exceeds the {limit}-byte message limit",
        details={"size": size, "limit": limit},
    )
