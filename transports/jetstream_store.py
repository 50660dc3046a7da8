"""The durable store on JetStream: a work-queue stream and a key-value bucket. nats-py errors end here.

Messages go to a stream with work-queue retention (a message is gone once acknowledged),
``Nats-Msg-Id`` de-duplication within ``duplicate_window``, and per-message TTLs where the
server keeps them (nats-server 2.11 and later; on older servers the TTL is left to the
taker). Each consumer is a durable pull consumer over one subject, acknowledging
explicitly, with no delivery limit (the task protocol counts attempts itself). Keys live
in a KV bucket keeping one revision each for ``keep`` seconds, read with direct gets
(``$JS.API.DIRECT.GET.<stream>.<subject>``: a permission can name the keys a user may
read); :meth:`JetStreamDurable.watch` follows keys with a plain subscription to their
``$KV`` subjects (no consumer is made for it).

The stream, the bucket and the consumers are used as they are when they exist: an
operator may have made them with other settings (three replicas, say) and, under
``a2a nats-config``'s permissions, only the admin may make or change them
(:func:`provision`). When one is missing, :meth:`JetStreamDurable.open` and
:meth:`JetStreamDurable.take` make it with the settings of :class:`StoreConfig`.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue

from ._match import subject_matches
from ._nats import NatsTransport
from .base import Subscription
from .durable import Delivery, DurableStore, Notice, checked_key
from .errors import MessageTooLarge, TransportError
from .jetstream_config import StoreConfig
from .jetstream_publish import LAST_SUBJECT_SEQ, WRONG_LAST, Refused, StoredPublisher, jetstream_errors

__all__ = ["JetStreamDurable", "StoreConfig", "jetstream_errors"]


RECENT = 8192
"""Stored values heard lately that a store keeps for watchers that come a moment later (at
most; when one more is heard, the older half is forgotten)."""


class _JetStreamDelivery(Delivery):
    __slots__ = ("_msg", "ack_wait", "attempt", "data", "sequence", "subject")

    def __init__(self, msg: Msg, ack_wait: float) -> None:
        self._msg = msg
        self.subject = msg.subject
        self.data = msg.data
        meta = msg.metadata
        self.attempt = meta.num_delivered
        self.sequence = meta.sequence.stream
        self.ack_wait = ack_wait

    async def ack(self) -> None:
        with jetstream_errors("ack"):
            await self._msg.ack()

    async def nak(self, delay: float = 0.0) -> None:
        with jetstream_errors("nak"):
            await self._msg.nak(delay=delay or None)

    async def working(self) -> None:
        with jetstream_errors("in-progress"):
            await self._msg.in_progress()

    async def term(self) -> None:
        with jetstream_errors("term"):
            await self._msg.term()


class JetStreamDurable(DurableStore):
    """The durable store of one namespace on a NATS connection; :meth:`open` before use."""

    def __init__(self, transport: NatsTransport, config: StoreConfig) -> None:
        self.transport = transport
        self.config = config
        self.ttl_supported = True
        """The stream keeps per-message TTLs (the server is 2.11 or later)."""
        self._js: JetStreamContext = transport.nc.jetstream(timeout=5.0)
        self._stored = StoredPublisher(transport.nc)
        self._kv: KeyValue | None = None
        self._pulls: dict[tuple[str, str], tuple[JetStreamContext.PullSubscription, float]] = {}
        self._families: dict[str, Subscription] = {}
        self._listening: dict[str, tuple[int, int]] = {}
        """Families listened to: the queue's last sequence when listening began (a message
        stored after it is of a task whose every write was heard), and the connection's
        reconnects then."""
        self._recent: OrderedDict[str, bytes] = OrderedDict()
        """The last stored values heard, by key (RECENT at most)."""
        self._watchers: dict[str, list[Notice]] = {}
        self._patterns: dict[str, list[Notice]] = {}
        self._watching: dict[str, int] = {}
        self._marking = anyio.Lock()
        transport.on_reconnect.append(self._reconnected)
        self._listen_at = f"$KV.{config.bucket}."
        """The prefix of the subjects watchers listen on (before the key)."""

    async def open(self) -> None:
        """Find the stream and the bucket, or make them.

        Raises:
            TransportError: no JetStream, or this user may neither see nor make them.
        """
        with jetstream_errors("opening the task stream"):
            await self._stored.start()
        try:
            await self._find_or_make()
        except BaseException:
            await self._stored.stop()  # not opened: no inbox subscription left behind
            raise

    async def _find_or_make(self) -> None:
        c = self.config
        with jetstream_errors("opening the task stream"):
            try:
                info = await self._js.stream_info(c.stream)
                self.ttl_supported = bool(info.config.allow_msg_ttl)
            except nats.js.errors.NotFoundError:
                if c.provisioned:
                    raise TransportError(
                        f"no task stream {c.stream}: the admin runs `a2a task setup`"
                    ) from None
                stream = c.stream_config()
                try:
                    await self._js.add_stream(stream)
                except nats.js.errors.BadRequestError:  # a server without per-message TTLs
                    stream.allow_msg_ttl = None
                    self.ttl_supported = False
                    await self._js.add_stream(stream)
            if c.provisioned:
                self._kv = KeyValue(c.bucket, f"KV_{c.bucket}", f"$KV.{c.bucket}.", self._js, direct=True)
                self._listen_at = f"{c.updates}."
                return
            try:
                self._kv = await self._js.key_value(c.bucket)
            except nats.js.errors.BucketNotFoundError:
                self._kv = await self._js.create_key_value(c.bucket_config())
            republished = (await self._js.stream_info(f"KV_{c.bucket}")).config.republish
            if c.updates and republished is not None and republished.dest == f"{c.updates}.>":
                self._listen_at = f"{c.updates}."  # stored writes only: their values can be used

    # -- queue ---------------------------------------------------------------------------

    async def enqueue(self, subject: str, msg_id: str, data: bytes, *, ttl: float | None = None) -> int:
        limit = self.transport.max_payload
        if len(data) > limit:
            raise MessageTooLarge(len(data), limit)
        headers = {"Nats-Msg-Id": msg_id}
        if ttl is not None and self.ttl_supported:
            headers["Nats-TTL"] = f"{max(1, math.ceil(ttl))}s"
        with jetstream_errors("storing a task"):
            ack = await self._stored.publish(subject, data, headers)
        return 0 if ack.duplicate else ack.seq

    async def take(self, consumer: str, subject: str, *, max_items: int, timeout: float) -> list[Delivery]:
        with jetstream_errors("taking tasks"):
            found = self._pulls.get((consumer, subject))
            if found is None:
                try:
                    info = await self._js.consumer_info(self.config.stream, consumer)
                except nats.js.errors.NotFoundError:
                    if self.config.provisioned:
                        raise TransportError(
                            f"no task consumer {consumer}: the admin runs `a2a task setup` for it"
                        ) from None
                    config = self.config.consumer_config(consumer, subject)
                    info = await self._js.add_consumer(self.config.stream, config)
                pull = await self._js.pull_subscribe_bind(consumer, self.config.stream)
                # The consumer's own ack wait (an operator may have made it with another).
                found = self._pulls[(consumer, subject)] = (
                    pull,
                    info.config.ack_wait or self.config.ack_wait,
                )
            pull, ack_wait = found
            try:
                messages = await pull.fetch(max_items, timeout=max(0.05, timeout))
            except TimeoutError:  # nats-py raises asyncio.TimeoutError for a batch, its own for one
                return []
        return [_JetStreamDelivery(msg, ack_wait) for msg in messages]

    async def stop_taking(self, consumer: str, subject: str) -> list[Delivery]:
        # A fetch cut short leaves its pull request waiting at the server, which goes on
        # sending to it: what came is read from the subscription's queue (a last fetch reads
        # it first), and unsubscribing ends the request.
        found = self._pulls.pop((consumer, subject), None)
        if found is None:
            return []
        pull, ack_wait = found
        messages: list[Msg] = []
        with jetstream_errors("stopping taking tasks"):
            try:
                if queued := pull.pending_msgs:  # read first; one more asked without waiting
                    messages = await pull.fetch(queued + 1, timeout=0.05)
            except TimeoutError:
                pass
            finally:
                with suppress(nats.errors.Error):
                    await pull.unsubscribe()
        return [_JetStreamDelivery(msg, ack_wait) for msg in messages]

    # -- bucket --------------------------------------------------------------------------

    @property
    def kv(self) -> KeyValue:
        assert self._kv is not None, "JetStreamDurable.open() was not called"
        return self._kv

    def _fits(self, value: bytes) -> None:
        limit = self.transport.max_payload
        if len(value) > limit:
            raise MessageTooLarge(len(value), limit)

    async def create(self, key: str, value: bytes) -> bool:
        self._fits(value)
        checked_key(key)
        with jetstream_errors("writing a task's record"):
            try:
                await self._stored.publish(f"$KV.{self.config.bucket}.{key}", value, {LAST_SUBJECT_SEQ: "0"})
            except Refused as exc:
                if exc.err_code not in WRONG_LAST:
                    raise
                try:  # a deleted key keeps a marker: nats-py's create writes over it
                    await self.kv.create(key, value)
                except nats.js.errors.KeyWrongLastSequenceError:
                    return False
        return True

    async def put(self, key: str, value: bytes) -> None:
        self._fits(value)
        with jetstream_errors("writing a task's record"):
            await self.kv.put(key, value)

    async def delete(self, key: str) -> None:
        with jetstream_errors("removing a task's record"):
            await self.kv.delete(key)

    async def get(self, key: str) -> bytes | None:
        with jetstream_errors("reading a task's record"):
            try:
                entry = await self.kv.get(key)
            except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
                return None
        return entry.value

    async def keys(self, pattern: str) -> list[str]:
        """From the bucket stream's subjects (a deleted key keeps its subject: its get is None)."""
        prefix = f"$KV.{self.config.bucket}."
        if self.config.provisioned:
            raise TransportError(
                "tasks cannot be listed here: the bucket's key names are not for every user to read"
            )
        with jetstream_errors("listing tasks"):
            info = await self._js.stream_info(f"KV_{self.config.bucket}", subjects_filter=prefix + pattern)
        return [subject[len(prefix) :] for subject in (info.state.subjects or {})]

    @asynccontextmanager
    async def watch(self, key: str, *, family: str | None = None) -> AsyncIterator[Notice]:
        """Keys are watched through one subscription per family (``outcome.*.me.*``, say),
        kept while any key of it is watched: many waiters at once cost one subscription
        (which hears every write of that family meanwhile)."""
        family = family or key.split(".", 1)[0] + ".>"
        notice = Notice()
        watchers = self._patterns if ("*" in key or ">" in key) else self._watchers
        watchers.setdefault(key, []).append(notice)
        self._watching[family] = self._watching.get(family, 0) + 1
        try:
            if family not in self._families:
                subject = self._listen_at + family
                self._families[family] = await self.transport.subscribe_stored(subject, self._written)
            if key in self._recent:  # written before this watch began
                notice.fire(key, self._recent[key])
            yield notice
        finally:
            notices = watchers[key]
            notices.remove(notice)
            if not notices:
                del watchers[key]
            self._watching[family] -= 1
            if not self._watching[family]:
                del self._watching[family]
                sub = None if family in self._listening else self._families.pop(family, None)
                if sub is not None:
                    with suppress(TransportError):
                        await sub.unsubscribe()

    async def listen(self, family: str) -> None:
        """Begin (or, after a reconnect or a forgotten value, begin again) to hear every
        stored write of ``family``: the mark is the task queue's last sequence, read after
        the subscription (the server handles a connection's messages in order)."""
        if not self.trusted:
            return
        found = self._listening.get(family)
        if found is not None and found[1] == self._reconnects():
            return
        async with self._marking:  # many submitters at once: one subscription, one read
            found = self._listening.get(family)
            if found is not None and found[1] == self._reconnects():
                return
            if family not in self._families:
                self._families[family] = await self.transport.subscribe_stored(
                    self._listen_at + family, self._written
                )
            reconnects = self._reconnects()
            with jetstream_errors("listening for task updates"):
                info = await self._js.stream_info(self.config.stream)
            self._listening[family] = (info.state.last_seq, reconnects)

    def heard(self, key: str, family: str, after: int) -> tuple[bool, bytes | None]:
        found = self._listening.get(family)
        recent = self._recent.get(key)
        if found is None or found[1] != self._reconnects():  # writes made while away were missed
            return False, recent
        return after > found[0], recent

    @property
    def trusted(self) -> bool:
        """Watchers hear the server's republished writes: stored values only."""
        return not self._listen_at.startswith("$KV.")

    def _reconnects(self) -> int:
        return int(self.transport.nc.stats["reconnects"])

    async def _reconnected(self) -> None:
        """Writes made while away were not heard: every watcher looks again."""
        for notices in [*self._watchers.values(), *self._patterns.values()]:
            for notice in notices:
                notice.fire()

    async def _written(self, msg: Any) -> None:
        subject: str = msg.subject
        if not subject.startswith(self._listen_at):
            return
        key = subject[len(self._listen_at) :]
        value: bytes | None = None
        if self.trusted:
            headers = msg.headers or {}
            # The server answers any JetStream request on whatever reply subject the requester
            # names (a direct get with the raw stored bytes of the requester's own key): only
            # the bucket's republish of a write of this very key counts, anything else is noise.
            if (
                msg.reply
                or headers.get("Nats-Stream") != f"KV_{self.config.bucket}"
                or headers.get("Nats-Subject") != f"$KV.{self.config.bucket}.{key}"
            ):
                return
            if not headers.get("KV-Operation"):  # a write the server stored (not a delete)
                value = self._recent[key] = msg.data
                self._recent.move_to_end(key)
                if len(self._recent) > RECENT:
                    # Values heard are forgotten, the older half at once: nothing is covered
                    # until listening begins again (one stream read sets a new mark, after
                    # every forgotten value's task), and the next RECENT // 2 writes keep it.
                    for _ in range(RECENT - RECENT // 2):
                        self._recent.popitem(last=False)
                    self._listening = {f: (mark, -1) for f, (mark, _) in self._listening.items()}
        for notice in self._watchers.get(key, ()):
            notice.fire(key, value)
        for pattern, notices in self._patterns.items():
            if subject_matches(pattern, key):
                for notice in notices:
                    notice.fire(key, value)

    async def aclose(self) -> None:
        await self._stored.stop()
        for sub in self._families.values():
            with suppress(TransportError):
                await sub.unsubscribe()
        self._families.clear()
        for pull, _ in self._pulls.values():
            with suppress(nats.errors.Error):
                await pull.unsubscribe()
        self._pulls.clear()
