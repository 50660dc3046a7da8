"""Server-Sent Events: writing one event, and reading a stream of them with bounded memory.

A2A streams (``SendStreamingMessage``, ``SubscribeToTask``, their REST and 0.3 forms) are
``text/event-stream`` responses in which every event is one ``data:`` line holding a JSON
document: a JSON-RPC response on the JSON-RPC binding, a bare ``StreamResponse`` on REST.
The official SDK server writes ``data: <json>\\r\\n\\r\\n``, no ``id``, no ``event`` except
``event: error`` for an error raised after the stream started, a ``: ping`` comment every
15 seconds, and ends the stream by closing the connection.

The reader follows the W3C parsing rules (any of CRLF, LF or CR ends a line; a blank line
ends an event; ``:`` starts a comment; one space after the colon is dropped; several
``data`` lines are joined with ``\\n``; an event without data is not dispatched; an
unterminated event at end of stream is dropped). It refuses lines longer than
``max_line`` characters (an unfinished line as soon as its bytes pass ``max_line``) and
events larger than ``max_event`` with ``SSEError`` instead of buffering without limit,
which ``httpx``'s ``aiter_lines`` would do. Bytes of an unfinished line are appended in
place, so a line arriving in many small chunks costs linear time.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_EVENT",
    "DEFAULT_MAX_LINE",
    "SSEDecoder",
    "SSEError",
    "SSEEvent",
    "format_comment",
    "format_event",
    "iter_sse_bytes",
    "iter_sse_lines",
]

DEFAULT_MAX_LINE = 1 << 20
DEFAULT_MAX_EVENT = 8 << 20


class SSEError(ValueError):
    """The stream broke a size limit or is not text."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. ``event`` defaults to ``"message"``, as in browsers."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


def format_event(data: bytes | str, *, event: str | None = None, id: str | None = None) -> bytes:
    """One SSE event carrying ``data`` (split on newlines into several ``data:`` lines)."""
    text = data.decode() if isinstance(data, bytes) else data
    for name, value in (("event", event), ("id", id)):
        if value is not None and any(c in value for c in "\r\n"):
            raise ValueError(f"SSE {name} must be a single line")
    lines = [f"event: {event}"] if event is not None else []
    if id is not None:
        lines.append(f"id: {id}")
    lines.extend(f"data: {line}" for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def format_comment(text: str = "") -> bytes:
    """A comment line (a keep-alive ping); readers ignore it."""
    if any(c in text for c in "\r\n"):
        raise ValueError("an SSE comment must be a single line")
    return f": {text}\r\n\r\n".encode()


class SSEDecoder:
    """Incremental SSE parser: feed it lines or byte chunks, collect finished events."""

    def __init__(self, *, max_line: int = DEFAULT_MAX_LINE, max_event: int = DEFAULT_MAX_EVENT) -> None:
        self.max_line = max_line
        self.max_event = max_event
        self._buffer = bytearray()
        self._pending_cr = False
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed_line(self, line: str) -> SSEEvent | None:
        """Process one line (without its terminator); returns the event a blank line completes."""
        line = line.rstrip("\r\n")
        if len(line) > self.max_line:
            raise SSEError(f"SSE line longer than {self.max_line} characters")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._size += len(value) + 1
            if self._size > self.max_event:
                raise SSEError(f"SSE event larger than {self.max_event} characters")
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Process a chunk of the byte stream; returns the events it completes, in order."""
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = False
        if b"\n" not in chunk and b"\r" not in chunk:  # the unfinished line only grows
            self._buffer += chunk
            self._check_unfinished()
            return []
        data = self._buffer + chunk
        events: list[SSEEvent] = []
        start = 0
        while True:
            cut = _line_end(data, start)
            if cut is None:
                break
            end, after = cut
            if end == len(data) - 1 and data[end : end + 1] == b"\r":
                self._pending_cr = True
            event = self.feed_line(_text(data[start:end]))
            if event is not None:
                events.append(event)
            start = after
        self._buffer = data[start:]
        self._check_unfinished()
        return events

    def _check_unfinished(self) -> None:
        # Bounded in bytes, so that what it holds never passes max_line whatever the characters.
        if len(self._buffer) > self.max_line:
            raise SSEError(f"SSE line longer than {self.max_line} bytes")

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent(
            data="\n".join(self._data), event=self._event or "message", id=self._id, retry=self._retry
        )
        self._data, self._size, self._event, self._retry = [], 0, "", None
        return event


def _line_end(data: bytes | bytearray, start: int) -> tuple[int, int] | None:
    """Index of the next line terminator from ``start`` and the index after it."""
    cr, lf = data.find(b"\r", start), data.find(b"\n", start)
    if cr == -1 and lf == -1:
        return None
    if cr == -1 or (lf != -1 and lf < cr):
        return lf, lf + 1
    if cr + 1 < len(data) and data[cr + 1 : cr + 2] == b"\n":
        return cr, cr + 2
    return cr, cr + 1


def _text(raw: bytes | bytearray) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise SSEError("SSE stream is not UTF-8") from exc


async def iter_sse_lines(
    lines: AsyncIterable[str], *, max_line: int = DEFAULT_MAX_LINE, max_event: int = DEFAULT_MAX_EVENT
) -> AsyncIterator[SSEEvent]:
    """Events from an async iterable of lines (``httpx.Response.aiter_lines()``)."""
    decoder = SSEDecoder(max_line=max_line, max_event=max_event)
    async for line in lines:
        event = decoder.feed_line(line)
        if event is not None:
            yield event


async def iter_sse_bytes(
    chunks: AsyncIterable[bytes], *, max_line: int = DEFAULT_MAX_LINE, max_event: int = DEFAULT_MAX_EVENT
) -> AsyncIterator[SSEEvent]:
    """Events from an async iterable of byte chunks (``httpx.Response.aiter_bytes()``), bounded."""
    decoder = SSEDecoder(max_line=max_line, max_event=max_event)
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
