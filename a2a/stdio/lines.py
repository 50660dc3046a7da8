"""Reading a pipe line by line without letting one endless line take the memory.

``asyncio.StreamReader.readline`` buffers a line whole before it knows its length;
:class:`LineReader` reads chunks and keeps at most ``limit`` bytes of the current line:
the rest of a longer line is skipped up to its newline, and the line is returned cut,
marked incomplete, with its last ``TAIL`` bytes, so the caller can refuse it or see what
it is about from both ends (stdout), or log its start (stderr).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

__all__ = ["CHUNK", "TAIL", "Line", "LineReader"]

CHUNK = 64 * 1024
"""Bytes asked of the pipe per read."""
TAIL = 4096
"""Bytes kept of the end of a line longer than the limit."""


class Readable(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


class Line(NamedTuple):
    """A line without its newline; ``complete`` is False when it was longer than the limit and cut
    (then ``tail`` holds its last bytes, at most ``TAIL``)."""

    data: bytes
    complete: bool
    tail: bytes = b""


class LineReader:
    """Lines of at most ``limit`` bytes from ``stream``; longer ones come back cut."""

    def __init__(self, stream: Readable, limit: int) -> None:
        if limit < 1:
            raise ValueError("the line limit must be at least 1 byte")
        self._stream = stream
        self._limit = limit
        self._chunk = b""
        self._eof = False

    async def readline(self) -> Line | None:
        """The next line, or None at the end of the stream (a last line without newline counts)."""
        kept = bytearray()
        tail = b""
        complete = True
        while True:
            if not self._chunk:
                if self._eof:
                    return Line(bytes(kept), complete, tail) if kept or not complete else None
                self._chunk = await self._stream.read(CHUNK)
                if not self._chunk:
                    self._eof = True
                    continue
            end = self._chunk.find(b"\n")
            piece = self._chunk if end < 0 else self._chunk[:end]
            self._chunk = b"" if end < 0 else self._chunk[end + 1 :]
            if complete:
                room = self._limit - len(kept)
                if len(piece) > room:
                    kept += piece[:room]
                    complete = False  # the rest of the line is read and dropped
                    tail = (bytes(kept[-TAIL:]) + piece[room:][-TAIL:])[-TAIL:]
                else:
                    kept += piece
            else:
                tail = (tail + piece[-TAIL:])[-TAIL:]
            if end >= 0:
                return Line(bytes(kept), complete, tail)
