"""The four wire dialects a client speaks: what each request looks like, and how each answer reads.

=================  ===========================================  ==========================
dialect            request                                      answer
=================  ===========================================  ==========================
JSON-RPC 1.0       ``POST url`` ``{"method": "SendMessage"...``  JSON-RPC, 1.0 ProtoJSON
JSON-RPC 0.3       ``POST url`` ``{"method": "message/send"...`` JSON-RPC, 0.3 ``kind`` JSON
HTTP+JSON 1.0      ``POST url/message:send`` and so on          bare 1.0 ProtoJSON
HTTP+JSON 0.3      ``POST url/v1/message:send`` and so on       bare 0.3 ProtoJSON
=================  ===========================================  ==========================

Every request carries ``A2A-Version`` (``1.0`` or ``0.3``). Nothing here does I/O: a
:class:`Dialect` turns 1.0 requests into :class:`HttpCall` and decoded JSON answers into
1.0 objects, raising ``A2AProtocolError`` for an error the remote answered with and
``msgspec.ValidationError`` for an answer of the wrong shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import msgspec

from bus.ids import new_id
from transports.a2a_http import (
    BINDING_JSONRPC,
    SSE_MEDIA_TYPE,
    VERSION_HEADER,
    A2AProtocolError,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    compat03,
    compat03_params,
    compat03_rest,
    convert,
    encode,
    error_from_rest,
    result_of,
)
from transports.a2a_http.jsonrpc import V03_METHOD_OF, Operation
from transports.a2a_http.types03 import Message03, Task03

from .interfaces import Endpoint

__all__ = ["Dialect", "HttpCall"]

_JSON = "application/json"


@dataclass(frozen=True, slots=True)
class HttpCall:
    """One HTTP request to make, and the JSON-RPC id its answer must echo (None on REST)."""

    method: str
    url: str
    body: bytes | None = None
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    rpc_id: str | None = None


def _rpc_result(obj: Any, rpc_id: str | None) -> Any:
    """The ``result`` of a JSON-RPC answer to ``rpc_id``; an error answer raises ``A2AProtocolError``."""
    if isinstance(obj, dict) and obj.get("error"):
        return result_of(obj)  # raises the remote's error, whatever id it carries
    if rpc_id is not None and isinstance(obj, dict) and obj.get("id") != rpc_id:
        raise msgspec.ValidationError(f"JSON-RPC answer to id {obj.get('id')!r}, expected {rpc_id!r}")
    return result_of(obj)


class Dialect:
    """Requests and answers of one endpoint (its binding and version)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.jsonrpc = endpoint.binding == BINDING_JSONRPC
        self.legacy = endpoint.legacy
        self.headers = {VERSION_HEADER: endpoint.version}

    # -- requests ------------------------------------------------------------------------------

    def send(self, request: SendMessageRequest, *, stream: bool) -> HttpCall:
        """``SendMessage`` or ``SendStreamingMessage``."""
        op = Operation.SEND_STREAMING_MESSAGE if stream else Operation.SEND_MESSAGE
        accept = {"Accept": SSE_MEDIA_TYPE} if stream else {}
        if self.jsonrpc:
            params: object = compat03_params.send_request_to_03(request) if self.legacy else request
            return self._rpc(op, params, accept)
        body = compat03_rest.send_request_to_pb03(request) if self.legacy else request
        verb = "message:stream" if stream else "message:send"
        return self._rest("POST", f"/{verb}", encode(body), headers=accept)

    def get(self, request: GetTaskRequest) -> HttpCall:
        """``GetTask`` (0.3 has no "no history": its ``historyLength`` 0 means all of it)."""
        if self.jsonrpc:
            params = compat03_params.get_task_request_to_03(request) if self.legacy else request
            return self._rpc(Operation.GET_TASK, params)
        query = {} if request.history_length is None else {"historyLength": str(request.history_length)}
        return self._rest("GET", f"/tasks/{quote(request.id, safe='')}", None, query=query)

    def cancel(self, request: CancelTaskRequest) -> HttpCall:
        """``CancelTask``."""
        if self.jsonrpc:
            params = compat03_params.task_id_request_to_03(request) if self.legacy else request
            return self._rpc(Operation.CANCEL_TASK, params)
        body = None if self.legacy else encode(CancelTaskRequest(id=request.id))
        return self._rest("POST", f"/tasks/{quote(request.id, safe='')}:cancel", body)

    def subscribe(self, request: SubscribeToTaskRequest) -> HttpCall:
        """``SubscribeToTask`` (0.3: ``tasks/resubscribe``)."""
        accept = {"Accept": SSE_MEDIA_TYPE}
        if self.jsonrpc:
            params = compat03_params.task_id_request_to_03(request) if self.legacy else request
            return self._rpc(Operation.SUBSCRIBE_TO_TASK, params, accept)
        return self._rest("POST", f"/tasks/{quote(request.id, safe='')}:subscribe", None, headers=accept)

    def _rpc(self, op: Operation, params: object, headers: dict[str, str] | None = None) -> HttpCall:
        rpc_id = new_id()
        method = V03_METHOD_OF[op] if self.legacy else op.value
        # A dict, not the codec's JsonRpcRequest: that Struct omits its default "jsonrpc": "2.0".
        body = encode({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})
        return HttpCall(
            "POST",
            self.endpoint.url,
            body,
            headers={**self.headers, "Content-Type": _JSON, **(headers or {})},
            rpc_id=rpc_id,
        )

    def _rest(
        self,
        method: str,
        path: str,
        body: bytes | None,
        *,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> HttpCall:
        base = self.endpoint.url.rstrip("/")
        if self.endpoint.tenant:
            base += "/" + quote(self.endpoint.tenant, safe="")
        if self.legacy:
            base += "/v1"
        all_headers = {**self.headers, **(headers or {})}
        if body is not None:
            all_headers["Content-Type"] = _JSON
        return HttpCall(method, base + path, body, query or {}, all_headers)

    # -- answers -------------------------------------------------------------------------------

    def send_result(self, obj: Any, rpc_id: str | None) -> Task | Message:
        """The task or message a ``SendMessage`` answer carries."""
        if self.jsonrpc:
            result = _rpc_result(obj, rpc_id)
            if not self.legacy:
                return convert(result, SendMessageResponse).result
            decoded = compat03.decode_result_03(result)
            if not isinstance(decoded, Task03 | Message03):
                raise msgspec.ValidationError("a 0.3 send result must be a task or a message")
            return compat03.send_result_from_03(decoded).result
        if self.legacy:
            return compat03_rest.decode_send_response_pb03(obj).result
        return convert(obj, SendMessageResponse).result

    def stream_event(self, obj: Any, rpc_id: str | None, *, error: bool = False) -> StreamResponse:
        """One event of a stream; an ``event: error`` (``error``) raises the error it carries."""
        if self.jsonrpc:
            result = _rpc_result(obj, rpc_id)
            if error:
                raise msgspec.ValidationError("an 'error' event without a JSON-RPC error")
            if not self.legacy:
                return convert(result, StreamResponse)
            return compat03.stream_result_from_03(compat03.decode_result_03(result))
        if error:
            raise self.error(500, obj)
        if self.legacy:
            return compat03_rest.decode_stream_response_pb03(obj)
        return convert(obj, StreamResponse)

    def task_result(self, obj: Any, rpc_id: str | None) -> Task:
        """The task a ``GetTask`` or ``CancelTask`` answer carries."""
        if self.jsonrpc:
            result = _rpc_result(obj, rpc_id)
            if not self.legacy:
                return convert(result, Task)
            decoded = compat03.decode_result_03(result)
            if not isinstance(decoded, Task03):
                raise msgspec.ValidationError("a 0.3 task result must be a task")
            return compat03.task_from_03(decoded)
        if self.legacy:
            return compat03_rest.decode_task_pb03(obj)
        return convert(obj, Task)

    def error(self, status: int, obj: Any) -> A2AProtocolError:
        """The A2A error a non-2xx answer (REST, or a JSON-RPC endpoint behind a proxy) carries."""
        if self.jsonrpc and isinstance(obj, dict) and obj.get("error"):
            try:
                result_of(obj)
            except A2AProtocolError as exc:
                return exc
        return error_from_rest(status, obj)
