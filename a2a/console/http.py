"""What every endpoint of the console shares: JSON replies, typed errors, and reading a body.

An error is ``{"error": {"code", "message"}}`` with the status its kind calls for; a body is
a JSON object of at most ``MAX_BODY`` bytes, posted as ``application/json`` from the page's
own origin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bus.errors import A2AError, InvalidParams, PermissionDenied, Unavailable

from ..sessions.store import NotFound
from .auth import ConsoleAuth
from .tasks import TaskNotFound

__all__ = ["MAX_BODY", "body_of", "failure", "for_user", "reply", "text_field", "unauthorised"]

MAX_BODY = 64 * 1024
_STATUS = {NotFound: 404, TaskNotFound: 404, PermissionDenied: 403, Unavailable: 503}
_API_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def reply(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=_API_HEADERS)


def failure(exc: A2AError) -> JSONResponse:
    status = next((code for cls, code in _STATUS.items() if isinstance(exc, cls)), 400)
    return reply({"error": {"code": exc.code, "message": exc.message}}, status)


def unauthorised() -> JSONResponse:
    return reply({"error": {"code": "UNAUTHENTICATED", "message": "log in first"}}, 401)


def for_user(
    auth: ConsoleAuth, handler: Callable[[Request, str], Awaitable[Response]]
) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint that runs ``handler(request, user)`` as the logged-in user: 401 without
    one, and the typed error reply for an :class:`A2AError` the handler raises."""

    async def endpoint(request: Request) -> Response:
        user = auth.user_of(request)
        if user is None:
            return unauthorised()
        try:
            return await handler(request, user)
        except A2AError as exc:
            return failure(exc)

    return endpoint


async def body_of(request: Request) -> dict[str, Any]:
    """The request's body: a JSON object.

    Raises:
        InvalidParams: not JSON, not an object, or over ``MAX_BODY`` bytes.
        PermissionDenied: posted from another origin.
    """
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise InvalidParams("send JSON (Content-Type: application/json)")
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host')}":
        raise PermissionDenied("cross-origin requests are refused")
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise InvalidParams(f"the body is over {MAX_BODY} bytes")
    try:
        body = msgspec.json.decode(data or b"{}")
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
        raise InvalidParams("the body is not JSON") from None
    if not isinstance(body, dict):
        raise InvalidParams("the body must be a JSON object")
    return body


def text_field(body: dict[str, Any], key: str, default: str = "") -> str:
    value = body.get(key, default)
    if not isinstance(value, str):
        raise InvalidParams(f"{key} must be a string")
    return value
