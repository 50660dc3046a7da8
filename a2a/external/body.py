"""Reading a remote agent's answers with a hard bound on what they inflate to.

httpx inflates ``gzip`` and ``deflate`` bodies with one zlib call per chunk received and no
output limit, so 64 KB of a compression bomb is 64 MB in memory before any size check can
see it. Answers are read raw here (``Response.aiter_raw``) and inflated with zlib's
``max_length``: no step produces more than :data:`PIECE` bytes, and every limit is checked
before the body grows. Requests offer :data:`ACCEPT_ENCODING`; an answer in a content coding
not offered (``br``, ``zstd``...) is a :class:`~.errors.MalformedResponse`, as is a body
that does not inflate.

- :func:`read_body`: a whole answer, at most ``limit`` bytes once inflated, else
  PAYLOAD_TOO_LARGE; the raw bytes are bounded the same way.
- :func:`iter_body`: an answer read as it comes (an SSE stream), in pieces of at most
  :data:`PIECE` bytes; whoever reads the pieces bounds what it keeps.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator

import httpx

from bus.errors import PayloadTooLarge

from .errors import MalformedResponse

__all__ = ["ACCEPT_ENCODING", "PIECE", "BodyDecoder", "iter_body", "read_body"]

ACCEPT_ENCODING = "gzip, deflate"
"""The content codings requests offer (``Accept-Encoding``): the ones inflated with a bound."""
PIECE = 64 << 10
"""Bytes one inflating step produces at most."""
_MAX_CODINGS = 2
"""Content codings one answer may stack (``gzip, deflate``); more is refused."""
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class _Inflater:
    """One content coding, inflated in pieces of at most PIECE bytes, ``limit`` bytes in all."""

    def __init__(self, coding: str, limit: int | None) -> None:
        self.coding = coding
        self.limit = limit
        self.produced = 0
        self._zlib = zlib.decompressobj(_WBITS[coding])
        # The first bytes of a deflate body, kept until its zlib header has been read: some
        # servers send raw deflate without one (httpx reads those too).
        self._head: bytes | None = b"" if coding == "deflate" else None

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while not self._zlib.eof:  # bytes after the end of the stream are ignored, as httpx does
            try:
                piece = self._zlib.decompress(pending, PIECE)
            except zlib.error as exc:
                if self._head is not None:
                    replay, self._head = self._head + data, None
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    yield from self.feed(replay)
                    return
                reason = f"the remote's {self.coding} answer does not inflate: {exc}"
                raise MalformedResponse(reason) from None
            if self._head is not None:  # the header is two bytes: past them, the format is settled
                self._head = self._head + data if len(self._head) + len(data) < 2 else None
            pending = self._zlib.unconsumed_tail
            if piece:
                self.produced += len(piece)
                if self.limit is not None and self.produced > self.limit:
                    raise PayloadTooLarge(f"the remote's answer inflates to over {self.limit} bytes")
                yield piece
            if not pending and len(piece) < PIECE:
                return  # all input taken and nothing held back


class BodyDecoder:
    """Inflates one answer as its raw bytes arrive; ``limit`` bounds each step's output in all.

    Raises:
        MalformedResponse: a content coding not offered (here), bytes that do not inflate
            (from :meth:`feed`).
        PayloadTooLarge: a step would produce more than ``limit`` bytes (from :meth:`feed`).
    """

    def __init__(self, content_encoding: str, limit: int | None = None) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",")]
        codings = [c for c in codings if c and c != "identity"]
        unknown = [c for c in codings if c not in _WBITS]
        if unknown or len(codings) > _MAX_CODINGS:
            raise MalformedResponse(
                f"the remote answered in content coding {content_encoding[:100]!r}; "
                f"only {ACCEPT_ENCODING} (at most {_MAX_CODINGS} stacked) are read"
            )
        # The last coding listed was applied last: it comes off first.
        self._stages = [_Inflater(c, limit) for c in reversed(codings)]

    def feed(self, raw: bytes) -> Iterator[bytes]:
        """The inflated pieces ``raw`` completes, of at most PIECE bytes each (without coding: ``raw``)."""
        pieces: Iterator[bytes] = iter((raw,))
        for stage in self._stages:
            pieces = _through(stage, pieces)
        return pieces


def _through(stage: _Inflater, pieces: Iterator[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from stage.feed(piece)


def _source(response: httpx.Response) -> tuple[AsyncIterator[bytes], str]:
    """The body's bytes and their content coding: raw as they arrive, or as httpx decoded
    them when the answer came read already (an in-memory transport builds it so)."""
    if response.is_stream_consumed:
        return _once(response.content), ""
    return response.aiter_raw(), response.headers.get("content-encoding", "")


async def _once(content: bytes) -> AsyncIterator[bytes]:
    yield content


async def read_body(response: httpx.Response, limit: int) -> bytes:
    """The whole inflated body, refusing more than ``limit`` bytes, raw or inflated (PAYLOAD_TOO_LARGE)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the remote's answer has {declared} bytes; at most {limit} are read")
    chunks, coding = _source(response)
    decoder = BodyDecoder(coding, limit)
    body = bytearray()
    received = 0
    async for raw in chunks:
        received += len(raw)
        if received > limit:
            raise PayloadTooLarge(f"the remote's answer is over {limit} bytes")
        for piece in decoder.feed(raw):
            if len(body) + len(piece) > limit:
                raise PayloadTooLarge(f"the remote's answer is over {limit} bytes")
            body += piece
    return bytes(body)


async def iter_body(response: httpx.Response) -> AsyncIterator[bytes]:
    """The inflated body as it arrives, in pieces of at most PIECE bytes (raw chunks without coding)."""
    chunks, coding = _source(response)
    decoder = BodyDecoder(coding)
    async for raw in chunks:
        for piece in decoder.feed(raw):
            yield piece
