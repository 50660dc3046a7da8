"""nats-py's client, with shortcuts on the path of every message it receives (used only over
the nats-py internals they were written against; otherwise nats-py's own client)."""

from __future__ import annotations

import inspect
import logging
import re
from typing import Any

import nats.errors
from nats.aio.client import Client as NatsClient
from nats.aio.subscription import Subscription as NatsSubscription

from .base import Taker

__all__ = ["Client", "FastClient"]

log = logging.getLogger("a2a.transport.nats")

_SPACE = re.compile(r"\s")


class FastClient(NatsClient):
    """nats-py's client with two shortcuts on the path of every message it receives.

    Its header parser tests a name for whitespace with one search instead of a generator
    over its characters: the same headers, at a fraction of the cost (every stored message
    and every JetStream delivery carries several). And a subscription with a taker (see
    :meth:`NatsTransport.subscribe`) is offered each message where the read loop parses it,
    before nats-py queues it for the subscription's task: a message taken there skips that
    queue and the task switch. A message nats-py cannot read (a subject or header status
    that is not UTF-8) is dropped and counted (``malformed``) instead of ending its read loop.
    """

    def __init__(self) -> None:
        super().__init__()
        self.takers: dict[int, Taker] = {}
        """Subscription id -> its taker."""
        self.take_failures = 0
        self.malformed = 0
        """Messages dropped because nats-py could not read them (not UTF-8 where text is due)."""

    @staticmethod
    def _parse_header_lines(raw: bytes) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in raw.split(b"\r\n"):
            if not line:
                continue
            name, sep, value = line.partition(b":")
            if not sep:
                continue
            try:
                key = name.strip().decode("ascii")
            except UnicodeDecodeError:  # a name that is no token: skipped, as nats-py does
                continue
            if _SPACE.search(key) is not None:
                continue
            out[key] = value.strip().decode("utf-8", "replace")
        return out

    async def subscribe_taking(self, subject: str, take: Taker, **options: Any) -> NatsSubscription:
        """:meth:`subscribe`, with ``take`` offered each message first."""
        sid = self._sid + 1  # the id subscribe gives it: assigned before subscribe first awaits
        self.takers[sid] = take
        try:
            return await self.subscribe(subject, **options)
        except BaseException:
            self.takers.pop(sid, None)
            raise

    async def stop_interest(self, sub: NatsSubscription, wait: int) -> None:
        """Tell the server to stop routing to ``sub`` and wait (up to ``wait`` seconds) for its
        answer to a ping sent after: what it routed here before is then read and handled as
        usual (taken, or queued for the subscription). Unsubscribing at once would drop it.
        The subscription stays until unsubscribed."""
        sid = next((sid for sid, known in self._subs.items() if known is sub), None)
        if sid is None or not self.is_connected:
            return
        try:
            await self._send_unsubscribe(sid)
            await self.flush(wait)
        except nats.errors.Error as exc:  # down or slow: what was on its way is lost with it
            log.debug("stopping interest in %s: %s", sub.subject, exc)

    def _remove_sub(self, sid: int, max_msgs: int = 0) -> None:
        self.takers.pop(sid, None)
        super()._remove_sub(sid, max_msgs)

    async def _process_msg(
        self,
        sid: int,
        subject: bytes,
        reply: bytes,
        data: bytes,
        headers: bytes,  # None when there are none, whatever nats-py's hint says
    ) -> None:
        try:
            take = self.takers.get(sid)
            # What the JetStream server published itself goes the usual way (see subscribe).
            if take is not None and not reply.startswith(b"$JS."):
                parsed = await self._process_headers(headers) if headers else None
                if not (parsed and "Nats-Stream" in parsed):
                    msg = self._build_message(sid, subject, reply, data, parsed)
                    try:
                        taken = take(msg)
                    except Exception:  # a taker's bug: logged, the message dropped, never the connection's
                        self.take_failures += 1
                        log.exception("a subscription's taker failed on %s", msg.subject)
                        return
                    if taken:
                        self.stats["in_msgs"] += 1
                        self.stats["in_bytes"] += len(data)
                        return
            await super()._process_msg(sid, subject, reply, data, headers)
        except ValueError as exc:
            # A subject, reply subject or header status that is not UTF-8 (the server passes
            # any bytes on): nats-py's read loop would end on it, and the connection hear
            # nothing until its next ping went unanswered. Only that message is dropped.
            self.malformed += 1
            if self.malformed & (self.malformed - 1) == 0:  # 1, 2, 4, 8, ...
                log.warning("%d malformed messages dropped; the last: %s", self.malformed, exc)


def _parameters(client: type, name: str) -> list[str] | None:
    """The parameters of a client class's method ``name`` (None: it has none such)."""
    found = inspect.getattr_static(client, name, None)
    if isinstance(found, staticmethod):
        found = found.__func__
    return list(inspect.signature(found).parameters) if callable(found) else None


# Only over the nats-py internals this one was written against.
_FAST = (
    _parameters(NatsClient, "_parse_header_lines") == ["raw"]
    and _parameters(NatsClient, "_process_msg") == ["self", "sid", "subject", "reply", "data", "headers"]
    and _parameters(NatsClient, "_build_message") == ["self", "sid", "subject", "reply", "data", "headers"]
    and _parameters(NatsClient, "_process_headers") is not None
    and _parameters(NatsClient, "_send_unsubscribe") == ["self", "sid", "limit"]
)
Client: type[NatsClient] = FastClient if _FAST else NatsClient
"""The client the transport connects with."""
