"""How failures talking to a remote A2A agent become this runtime's typed errors.

=====================================================  =================================
what happened                                          typed error
=====================================================  =================================
connection refused, DNS failure (nothing listens)      NO_RESPONDERS (the call never ran)
HTTP 502 / 503 (a proxy in front has no backend)       NO_RESPONDERS
HTTP timeout, HTTP 504                                 DEADLINE_EXCEEDED
the connection broke after the request went out        AGENT_LOST (it may have run)
HTTP 401 / 403                                         PERMISSION_DENIED
HTTP 429                                               OVERLOADED
HTTP 413, a body or SSE event over the size limit      PAYLOAD_TOO_LARGE
  (inflated or not)
a redirect (HTTP 3xx with a Location)                  AGENT_ERROR (:class:`RedirectRefused`)
A2A invalid params / request / content type / JSON     INVALID_PARAMS
A2A version not supported                              UNSUPPORTED_VERSION
any other A2A error                                    AGENT_ERROR
a body that is not the JSON the protocol says, in a    AGENT_ERROR (:class:`MalformedResponse`)
  content coding not offered, or that does not inflate
=====================================================  =================================

Messages quote the remote; the proxy redacts them before they leave the process.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

import httpx

from bus.errors import (
    A2AError,
    AgentError,
    AgentLost,
    DeadlineExceeded,
    InvalidParams,
    NoResponders,
    Overloaded,
    PayloadTooLarge,
    PermissionDenied,
    UnsupportedVersion,
)
from transports.a2a_http import A2AProtocolError

__all__ = [
    "MAX_REMOTE_MESSAGE",
    "MalformedResponse",
    "RedirectRefused",
    "from_http_status",
    "from_protocol_error",
    "from_transport_error",
    "redirect_refused",
    "redirect_target",
    "remote_text",
]

MAX_REMOTE_MESSAGE = 2000
"""Characters of a remote's error message kept (the rest is cut)."""

_INVALID = frozenset(
    {"InvalidParamsError", "InvalidRequestError", "JSONParseError", "ContentTypeNotSupportedError"}
)


class MalformedResponse(AgentError):
    """The remote answered with something that is not what the A2A protocol says (AGENT_ERROR)."""


class RedirectRefused(AgentError):
    """The remote answered with a redirect that is not followed (AGENT_ERROR).

    ``details`` carry ``httpStatus`` and the absolute ``location`` it pointed to.
    """


def redirect_target(url: str, location: str) -> str:
    """The absolute URL a redirect from ``url`` points to, as one bounded line."""
    try:
        target = urljoin(url, location.strip())
    except ValueError:  # e.g. a malformed IPv6 host
        target = location
    return remote_text(target, "(empty)")


def redirect_refused(url: str, status: int, target: str, why: str) -> RedirectRefused:
    """The error of a redirect from ``url`` to ``target`` (see :func:`redirect_target`) not followed."""
    return RedirectRefused(
        f"{url} redirects (HTTP {status}) to {target}: {why}",
        details={"httpStatus": status, "location": target},
    )


def remote_text(text: object, default: str) -> str:
    """A remote's message as one bounded line of text, ``default`` when it gave none."""
    if not isinstance(text, str) or not text.strip():
        return default
    line = " ".join(text.split())
    return line if len(line) <= MAX_REMOTE_MESSAGE else line[: MAX_REMOTE_MESSAGE - 1] + "…"


def from_protocol_error(error: A2AProtocolError) -> A2AError:
    """The typed error for an A2A error the remote answered with (JSON-RPC or REST)."""
    name = error.spec.name
    message = remote_text(error.message, error.spec.message)
    details: dict[str, Any] = {"a2aError": name, "a2aCode": error.code}
    if name in _INVALID:
        return InvalidParams(message, details=details)
    if name == "VersionNotSupportedError":
        return UnsupportedVersion(message, details=details)
    return AgentError(message, details=details)


def from_http_status(status: int, message: str | None = None) -> A2AError | None:
    """The typed error an HTTP status says by itself, or None when the body must tell."""
    said = f": {message}" if message else ""
    details = {"httpStatus": status}
    if status in (401, 403):
        return PermissionDenied(
            f"the remote agent refused the request (HTTP {status}){said}", details=details
        )
    if status == 429:
        return Overloaded(f"the remote agent is overloaded (HTTP 429){said}", details=details)
    if status == 413:
        return PayloadTooLarge(f"the remote agent refused the request as too large{said}", details=details)
    if status in (502, 503):
        return NoResponders(f"nothing serves the remote agent (HTTP {status}){said}", details=details)
    if status == 504:
        return DeadlineExceeded(f"the remote agent did not answer in time (HTTP 504){said}", details=details)
    return None


def from_transport_error(exc: httpx.HTTPError, url: str) -> A2AError:
    """The typed error for a failure below HTTP: connecting, timing out, a broken connection."""
    reason = remote_text(str(exc), type(exc).__name__)
    if isinstance(exc, httpx.TimeoutException):
        return DeadlineExceeded(f"no answer from {url} in time ({reason})")
    if isinstance(exc, httpx.ConnectError):
        return NoResponders(f"cannot connect to {url}: {reason}")
    if isinstance(exc, httpx.TransportError):
        return AgentLost(f"the connection to {url} broke: {reason}")
    return MalformedResponse(f"bad HTTP exchange with {url}: {reason}")
