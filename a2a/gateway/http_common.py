"""What both HTTP bindings share: reading a bounded body, the caller's identity, SSE responses."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from transports.a2a_http import A2AProtocolError, StreamResponse
from transports.a2a_http import errors as e
from transports.a2a_http.sse import format_comment
from transports.a2a_http.versions import request_version, version_compatible

from .auth import Authenticator, AuthError
from .service import GatewayService
from .subscriptions import Events
from .tasks import Numbered

__all__ = [
    "MAX_DEPTH",
    "Served",
    "check_depth",
    "check_version",
    "last_event_id",
    "principal_or_401",
    "read_body",
    "sse_response",
    "unauthorized",
]

log = logging.getLogger("a2a.gateway")


@dataclass(frozen=True)
class Served:
    """What the HTTP handlers serve from: the operations, who may call, how big a body may be."""

    service: GatewayService
    auth: Authenticator
    max_body: int


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing more than ``limit`` bytes before reading them all.

    Raises:
        A2AProtocolError: too large (INVALID_REQUEST), or the client went away.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise A2AProtocolError(e.INVALID_REQUEST, f"request body over {limit} bytes")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise A2AProtocolError(e.INVALID_REQUEST, f"request body over {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise A2AProtocolError(e.INVALID_REQUEST, "the client went away") from None
    return b"".join(chunks)


MAX_DEPTH = 128
"""Levels a request's JSON may nest (serde_json's default). Deeper data could decode here
and still break an encoder further on, whose stack is deeper: it is refused at the edge."""


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse JSON (decoded) nesting deeper than ``limit`` levels; walked without recursion.

    Raises:
        A2AProtocolError: INVALID_PARAMS.
    """
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            raise A2AProtocolError(e.INVALID_PARAMS, f"the request nests deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def unauthorized(error: AuthError, auth: Authenticator) -> Response:
    challenges = []
    if auth.jwt_config is not None:
        challenges.append('Bearer realm="a2a-gateway"')
    if auth.api_keys:
        challenges.append('ApiKey header="X-API-Key"')
    headers = {"WWW-Authenticate": ", ".join(challenges)} if challenges else None
    return JSONResponse(
        {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": str(error)}}, 401, headers=headers
    )


def principal_or_401(request: Request, auth: Authenticator) -> str | Response:
    try:
        return auth.principal(request.headers)
    except AuthError as exc:
        return unauthorized(exc, auth)


def sse_response(
    events: Events,
    frame: Callable[[StreamResponse], bytes],
    failed: Callable[[A2AProtocolError], bytes],
) -> StreamingResponse:
    """An SSE response: one ``frame`` per event (a numbered one with its number as ``id``, the
    cursor a client resumes after: ``Last-Event-ID``), a comment for each keep-alive,
    ``failed`` on an error."""

    async def body() -> AsyncIterator[bytes]:
        try:
            async for event in events:
                if event is None:
                    yield format_comment("ping")
                elif isinstance(event, Numbered):
                    yield b"id: %d\n" % event.seq + frame(event.event)
                else:
                    yield frame(event)
        except A2AProtocolError as exc:
            yield failed(exc)
        except Exception as exc:  # Redis away mid-stream, and the like: end with an error event
            log.warning("stream ended by %s", exc)
            yield failed(A2AProtocolError(e.INTERNAL_ERROR, "the stream broke off: " + type(exc).__name__))

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def last_event_id(request: Request) -> int | None:
    """The cursor a resuming stream asks for: the ``Last-Event-ID`` header (the number of the
    last event the client got), or None.

    Raises:
        A2AProtocolError: INVALID_PARAMS for one that is not an event number of this gateway.
    """
    value = request.headers.get("last-event-id")
    if value is None or value == "":
        return None
    if not value.isdigit() or len(value) > 12:
        raise A2AProtocolError(
            e.INVALID_PARAMS, "Last-Event-ID: the number of an event of this task's stream"
        )
    return int(value)


def check_version(request: Request, expected: str) -> None:
    """Refuse a request whose ``A2A-Version`` (header, else query parameter; missing means 0.3)
    does not fit ``expected``.

    Raises:
        A2AProtocolError: VERSION_NOT_SUPPORTED.
    """
    version = request_version(request.headers, request.query_params)
    if not version_compatible(version, expected):
        raise A2AProtocolError(
            e.VERSION_NOT_SUPPORTED,
            f"A2A version '{version}' is not supported here: send A2A-Version: {expected} "
            "(a header, or a query parameter)",
        )
