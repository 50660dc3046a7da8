"""Protocol versions, the ``A2A-Version`` header and the other fixed names of the HTTP bindings.

A client names the protocol version it speaks in the ``A2A-Version`` request header, or
in a query parameter of that name (spec 3.6.1). The official SDK server reads only the
header, treats a missing or empty one as ``"0.3"`` and accepts a request
when the header's major version equals the handler's (``"1.7"`` is served by a 1.0
handler, ``"2.0"`` is not, ``"0.5"`` is served by a 0.3 handler). It never echoes the
header back. Which handler runs is decided by the JSON-RPC method name or the REST route,
not by the header; the header is then only checked against that handler.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "A2A_JSON_MEDIA_TYPE",
    "AGENT_CARD_PATH",
    "EXTENSIONS_HEADER",
    "LEGACY_EXTENSIONS_HEADER",
    "PROTOCOL_VERSION_0_3",
    "PROTOCOL_VERSION_1_0",
    "SSE_MEDIA_TYPE",
    "VERSION_HEADER",
    "is_legacy_version",
    "parse_version",
    "request_version",
    "requested_extensions",
    "version_compatible",
]

VERSION_HEADER = "A2A-Version"
EXTENSIONS_HEADER = "A2A-Extensions"
LEGACY_EXTENSIONS_HEADER = "X-A2A-Extensions"
"""The 0.3 name of ``A2A-Extensions``; 0.3 peers send and expect this one."""

PROTOCOL_VERSION_1_0 = "1.0"
PROTOCOL_VERSION_0_3 = "0.3"

A2A_JSON_MEDIA_TYPE = "application/a2a+json"
"""Content type of successful HTTP+JSON (1.0) responses; errors are ``application/json``."""

SSE_MEDIA_TYPE = "text/event-stream"
AGENT_CARD_PATH = "/.well-known/agent-card.json"

_VERSION = re.compile(r"[vV]?(\d{1,9})(?:\.(\d{1,9}))?(?:\.\d{1,9})*")


def parse_version(value: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version such as ``"1.0"``, ``"0.3.0"`` or ``"1"``; ``None`` if invalid."""
    match = _VERSION.fullmatch(value.strip())
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def request_version(headers: Mapping[str, str], query: Mapping[str, str] | None = None) -> str:
    """The version a request asks for: its ``A2A-Version`` header, else its ``A2A-Version``
    query parameter; ``"0.3"`` when neither is given or both are empty.

    ``headers`` may be any mapping; the lookup tries the canonical and the lower-case name,
    so a case-insensitive mapping (Starlette, httpx) and a plain dict both work. The query
    parameter's name is matched without regard to case, as service parameter names are.
    When both are given the header wins: the spec names the header first and lets the
    query parameter stand in for it, and says nothing of a request with both.
    """
    value = (headers.get(VERSION_HEADER) or headers.get(VERSION_HEADER.lower()) or "").strip()
    if not value and query:
        wanted = VERSION_HEADER.lower()
        value = next((v.strip() for k, v in query.items() if k.lower() == wanted and v.strip()), "")
    return value or PROTOCOL_VERSION_0_3


def version_compatible(actual: str, expected: str) -> bool:
    """Whether a handler for ``expected`` serves a request for ``actual``: same string or same major."""
    if actual == expected:
        return True
    a, e = parse_version(actual), parse_version(expected)
    return a is not None and e is not None and a[0] == e[0]


def is_legacy_version(version: str) -> bool:
    """Whether ``version`` is a 0.x version from 0.3 on (spoken with the 0.3 wire format)."""
    parsed = parse_version(version) if version else None
    return parsed is not None and (0, 3) <= parsed < (1, 0)


def requested_extensions(values: list[str]) -> set[str]:
    """Extension URIs from (possibly repeated, comma-separated) ``A2A-Extensions`` header values."""
    return {uri for value in values for part in value.split(",") if (uri := part.strip())}
