"""Read limits for uvicorn's HTTP/1.1 connections: a request's head and body arrive in time, or it ends.

uvicorn bounds only the idle time between requests (``timeout_keep_alive``, reset by every
byte received), so a client that sends its request a byte at a time holds a connection, a
file descriptor and a buffer for as long as it likes; with httptools, a request head has no
size limit either. :class:`ReadLimits` bounds both, per request and from the first byte, not
per read:

- ``header_timeout``: the request's head (request line and headers) must be complete this
  many seconds after the connection opens, or after the first byte of a following request
  on it. A connection that sends nothing is closed after it too.
- ``body_timeout``: the body must be complete this many seconds after the head.
- ``max_head``: bytes of one request's head.

A request that misses one gets ``408 Request Timeout`` (``431`` for a head too large) when
no response has begun, and its connection is closed; an app still reading its body sees the
client go away. Answers being streamed (SSE) are not limited: the limits end when the
request has arrived.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

__all__ = ["ReadLimits", "limited_protocol"]

if TYPE_CHECKING:  # uvicorn picks httptools when it is installed, h11 otherwise: both have this shape
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Base
else:
    from uvicorn.protocols.http.auto import AutoHTTPProtocol as _Base

Phase = Literal["head", "body"]


@dataclass(frozen=True)
class ReadLimits:
    """How long a request may take to arrive, and how large its head may be.

    The timeouts follow what uvicorn's maintainers proposed for its own
    ``--timeout-request-start`` (about 10 s for the head) and ``--timeout-request-complete``
    (about 60 s for the body); 64 KiB is four times h11's default head limit.
    """

    header_timeout: float = 10.0
    body_timeout: float = 60.0
    max_head: int = 64 * 1024

    def __post_init__(self) -> None:
        if not (self.header_timeout > 0 and self.body_timeout > 0 and self.max_head > 0):
            raise ValueError("read limits must be positive")


def _answer(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": {"code": status, "status": reason, "message": message}}).encode()
    return (
        f"HTTP/1.1 {status} {reason.replace('_', ' ').title()}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode() + body


class _LimitedProtocol(_Base):
    """uvicorn's HTTP/1.1 protocol, watched from outside: a deadline runs while a request arrives.

    The parser's progress is read after each read: a new request/response cycle means a
    head is complete, its ``more_body`` turning false means the body is, and a request
    begun but not complete (httptools' message callbacks, or h11's unparsed bytes) means a
    head is on its way. A head deadline starts when the connection opens, and when a further
    request begins with no response under way (one pipelined behind a long stream starts its
    deadline when that stream ends).
    """

    limits = ReadLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: Phase | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._cycle: object = None
        """The request whose head was last seen complete."""
        self._begun = self._heads = 0
        """Requests httptools began and whose heads it completed."""
        self._head_bytes = 0

    # -- uvicorn's hooks ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start("head")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begun += 1

    def on_headers_complete(self) -> None:
        self._heads += 1
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()
        if self._phase == "head" or (self._phase is None and self._partial_head()):
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_head:
                self._refuse("head", 431, "REQUEST_HEADER_FIELDS_TOO_LARGE", "the request head is too large")

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    # -- the deadline --------------------------------------------------------------------

    def _partial_head(self) -> bool:
        """Bytes of a request whose head is not complete yet have arrived."""
        conn = getattr(self, "conn", None)  # h11 keeps them unparsed
        if conn is not None:
            return bool(conn.trailing_data[0])
        return self._begun > self._heads

    def _follow(self) -> None:
        """Move the deadline on from what the parser has seen so far."""
        if self.transport.is_closing():
            self._stop()
            return
        cycle = self.cycle
        if cycle is not None and cycle is not self._cycle:  # a head arrived
            self._cycle, self._head_bytes = cycle, 0
            self._stop()
            if cycle.more_body:
                self._start("body")
                return
        if self._phase == "body":
            if cycle.more_body:
                return
            self._stop()  # the body arrived
        if self._phase is None and self._partial_head() and (cycle is None or cycle.response_complete):
            self._start("head")

    def _start(self, phase: Phase) -> None:
        self._stop()
        self._phase = phase
        timeout = self.limits.header_timeout if phase == "head" else self.limits.body_timeout
        self._timer = self.loop.call_later(timeout, self._expired, phase, timeout)

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._phase = None

    def _expired(self, phase: Phase, timeout: float) -> None:
        self._timer = None
        what = "request head" if phase == "head" else "request body"
        self._refuse(phase, 408, "REQUEST_TIMEOUT", f"the {what} did not arrive within {timeout:g} s")

    def _refuse(self, phase: Phase, status: int, reason: str, message: str) -> None:
        """Answer ``status`` unless that would go into a response, and close; the app sees its client go."""
        self._stop()
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # what the app sends from now on goes nowhere
            cycle.message_event.set()
        # Never into a response: one under way, or the one a late body's request already got.
        if cycle is None or not cycle.response_started or (phase == "head" and cycle.response_complete):
            self.transport.write(_answer(status, reason, message))
        self.transport.close()


def limited_protocol(limits: ReadLimits) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class (``Config(http=...)``) enforcing ``limits``."""
    protocol: type[asyncio.Protocol] = type("LimitedHTTPProtocol", (_LimitedProtocol,), {"limits": limits})
    return protocol
