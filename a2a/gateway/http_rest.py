"""The HTTP+JSON binding (protocol 1.0): ``POST /message:send``, ``GET /tasks/{id}``, ...

Routes sit under the interface URL: the gateway's root, or ``/agents/<name>``. Success
is ``application/a2a+json``; errors are the protocol's ``{"error": {code, status,
message, details}}`` body with its HTTP status. Requests must say ``A2A-Version: 1.x``
(a header, or a query parameter).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from transports.a2a_http import A2AProtocolError, StreamResponse, codec
from transports.a2a_http import errors as e
from transports.a2a_http.jsonrpc import PARAMS_V1, Operation
from transports.a2a_http.rest import parse_get_task_query, parse_list_tasks_query
from transports.a2a_http.sse import format_event
from transports.a2a_http.versions import (
    A2A_JSON_MEDIA_TYPE,
    PROTOCOL_VERSION_1_0,
)

from . import dispatch
from .http_common import (
    Served,
    check_depth,
    check_version,
    last_event_id,
    principal_or_401,
    read_body,
    sse_response,
)
from .proto_names import json_names

__all__ = ["handle_rest"]

_PUSH_BY_PATH = frozenset(
    {Operation.GET_PUSH_CONFIG, Operation.LIST_PUSH_CONFIGS, Operation.DELETE_PUSH_CONFIG}
)


def _error(error: A2AProtocolError) -> Response:
    status, body = e.rest_error_body(error)
    return JSONResponse(body, status)


async def _params(request: Request, op: Operation, task_id: str | None, max_body: int) -> Any:
    query = urllib.parse.parse_qs(request.url.query, keep_blank_values=True)
    try:
        if op is Operation.GET_TASK:
            assert task_id is not None
            return parse_get_task_query(task_id, query)
        if op is Operation.LIST_TASKS:
            return parse_list_tasks_query(query)
        if op in _PUSH_BY_PATH:  # GET and DELETE: the path names it all
            push_id = request.path_params.get("push_id", "")
            return codec.convert({"taskId": task_id, **({"id": push_id} if push_id else {})}, PARAMS_V1[op])
        body = await read_body(request, max_body)
        data: Any = codec.decode(body) if body.strip() else {}
        if not isinstance(data, dict):
            raise A2AProtocolError(e.INVALID_REQUEST, "the body must be a JSON object")
        check_depth(data)
        data = json_names(data, PARAMS_V1[op])
        if op is Operation.CREATE_PUSH_CONFIG:
            data["taskId"] = task_id
        elif task_id is not None:
            data["id"] = task_id
        return codec.convert(data, PARAMS_V1[op])
    except msgspec.ValidationError as exc:  # a DecodeError too: caught first
        raise A2AProtocolError(e.INVALID_PARAMS, f"Validation failed: {exc}") from None
    except msgspec.DecodeError as exc:
        raise A2AProtocolError(e.INVALID_REQUEST, f"Failed to load JSON: {exc}") from None


async def handle_rest(
    request: Request, served: Served, op: Operation, agent: str | None, task_id: str | None = None
) -> Response:
    """Answer one REST call for operation ``op``."""
    principal = principal_or_401(request, served.auth)
    if isinstance(principal, Response):
        return principal
    try:
        check_version(request, PROTOCOL_VERSION_1_0)
        params = await _params(request, op, task_id, served.max_body)
        service = served.service
        with service.runtime.telemetry.server_span(f"A2A {op.value}", request.headers):
            if op.streaming:
                events = await dispatch.stream(service, op, params, principal, agent, last_event_id(request))
                return sse_response(events, _frame, _failed)
            result = await dispatch.unary(service, op, params, principal, agent)
        body = codec.encode(result) if result is not None else b"{}"
        return Response(body, media_type=A2A_JSON_MEDIA_TYPE)
    except A2AProtocolError as exc:
        return _error(exc)


def _frame(event: StreamResponse) -> bytes:
    return format_event(codec.encode(event))


def _failed(error: A2AProtocolError) -> bytes:
    return format_event(codec.encode(e.rest_error_body(error)[1]), event="error")
