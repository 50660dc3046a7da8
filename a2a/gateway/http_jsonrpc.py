"""The JSON-RPC binding: one POST endpoint, 1.0 and 0.3 method names, HTTP 200 for every answer.

The method name decides the dialect (``SendMessage`` is 1.0, ``message/send`` is 0.3);
then ``A2A-Version`` (the header, else the query parameter) must fit it (missing means
0.3), as the protocol says:
a 1.0 method without ``A2A-Version: 1.x`` is ``VersionNotSupported`` (-32009).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from transports.a2a_http import A2AProtocolError, StreamResponse, codec
from transports.a2a_http import errors as e
from transports.a2a_http.compat03 import send_result_to_03, stream_result_to_03, task_to_03
from transports.a2a_http.compat03_params import push_config_to_03
from transports.a2a_http.jsonrpc import (
    PARAMS_V1,
    MethodRef,
    Operation,
    decode_params,
    error_response,
    parse_request,
    resolve_method,
    success_response,
)
from transports.a2a_http.sse import format_event
from transports.a2a_http.versions import (
    PROTOCOL_VERSION_0_3,
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

__all__ = ["handle_jsonrpc"]

RequestId = str | int | None


def _json(body: Any) -> Response:
    return Response(codec.encode(body), media_type="application/json")


def _legacy_result(op: Operation, result: Any) -> Any:
    """A 1.0 result in the 0.3 dialect."""
    if op is Operation.SEND_MESSAGE:
        return send_result_to_03(result)
    if op in (Operation.GET_TASK, Operation.CANCEL_TASK):
        return task_to_03(result)
    if op in (Operation.CREATE_PUSH_CONFIG, Operation.GET_PUSH_CONFIG):
        return push_config_to_03(result)
    if op is Operation.LIST_PUSH_CONFIGS:
        return [push_config_to_03(config) for config in result.configs]
    return result


async def handle_jsonrpc(request: Request, served: Served, agent: str | None) -> Response:
    """Answer one JSON-RPC call on the gateway's endpoint (``agent`` None) or an agent's."""
    service = served.service
    principal = principal_or_401(request, served.auth)
    if isinstance(principal, Response):
        return principal
    request_id: RequestId = None
    method: MethodRef | None = None
    try:
        call = parse_request(await read_body(request, served.max_body))
        request_id = call.id if isinstance(call.id, str | int) else None
        check_depth(call.params)
        method = resolve_method(call.method)
        check_version(request, PROTOCOL_VERSION_0_3 if method.legacy else PROTOCOL_VERSION_1_0)
        if method.operation is Operation.LIST_TASKS and method.legacy:
            raise A2AProtocolError(e.METHOD_NOT_FOUND)
        given = call.params if method.legacy else json_names(call.params, PARAMS_V1[method.operation])
        params = decode_params(method, given)
        op = method.operation
        with service.runtime.telemetry.server_span(f"A2A {op.value}", request.headers):
            if op.streaming:
                events = await dispatch.stream(service, op, params, principal, agent, last_event_id(request))
                return _stream(events, request_id, method)
            result = await dispatch.unary(service, op, params, principal, agent)
        if method.legacy:
            result = _legacy_result(method.operation, result)
        return _json(success_response(request_id, result))
    except A2AProtocolError as exc:
        legacy = method.legacy if method is not None else False
        request_id = getattr(exc, "request_id", request_id)
        return _json(error_response(request_id, exc, legacy=legacy))


def _stream(events: Any, request_id: RequestId, method: MethodRef) -> Response:
    legacy = method.legacy

    def frame(event: StreamResponse) -> bytes:
        result: Any = stream_result_to_03(event) if legacy else event
        return format_event(codec.encode(success_response(request_id, result)))

    def failed(error: A2AProtocolError) -> bytes:
        body = codec.encode(error_response(request_id, error, legacy=legacy))
        return format_event(body) if legacy else format_event(body, event="error")

    return sse_response(events, frame, failed)
