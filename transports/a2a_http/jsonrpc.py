"""JSON-RPC 2.0 envelopes for the A2A JSON-RPC binding, and the method tables of 1.0 and 0.3.

One endpoint takes every call as ``POST`` and answers HTTP 200, errors included. The method
name picks both the operation and the wire dialect: ``SendMessage`` is 1.0 (params are
the protobuf JSON of ``SendMessageRequest``), ``message/send`` is 0.3 (params in the 0.3
dialect of ``types03``). Both name the same ``Operation``.

``parse_request`` applies the official SDK server's checks in its order: not JSON is -32700
(with ``id: null``), a batch array, a ``jsonrpc`` other than ``"2.0"``, a boolean or
non-scalar ``id`` or a missing method is -32600; ``resolve_method`` finds the operation
(unknown is -32601); ``decode_params`` validates the params (-32602 on 1.0; 0.3 peers get
-32600, as the SDK's pydantic layer reports it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from . import codec
from .card import AgentCard
from .compat03_params import params_from_03
from .errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSON_PARSE_ERROR,
    METHOD_NOT_FOUND,
    A2AProtocolError,
    error_from_jsonrpc,
    jsonrpc_error_object,
)
from .methods import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from .types import SendMessageResponse, StreamResponse, Task

__all__ = [
    "METHODS_V03",
    "METHODS_V1",
    "JsonRpcErrorObject",
    "JsonRpcRequest",
    "JsonRpcRequestError",
    "JsonRpcResponse",
    "MethodRef",
    "Operation",
    "decode_params",
    "error_response",
    "parse_request",
    "resolve_method",
    "result_of",
    "success_response",
]

RequestId = str | int | None


class Operation(enum.Enum):
    """What a call does, whatever protocol version named it. The value is the 1.0 method name."""

    SEND_MESSAGE = "SendMessage"
    SEND_STREAMING_MESSAGE = "SendStreamingMessage"
    GET_TASK = "GetTask"
    LIST_TASKS = "ListTasks"
    CANCEL_TASK = "CancelTask"
    SUBSCRIBE_TO_TASK = "SubscribeToTask"
    CREATE_PUSH_CONFIG = "CreateTaskPushNotificationConfig"
    GET_PUSH_CONFIG = "GetTaskPushNotificationConfig"
    LIST_PUSH_CONFIGS = "ListTaskPushNotificationConfigs"
    DELETE_PUSH_CONFIG = "DeleteTaskPushNotificationConfig"
    GET_EXTENDED_CARD = "GetExtendedAgentCard"

    @property
    def streaming(self) -> bool:
        """Whether the answer is an SSE stream of ``StreamResponse``."""
        return self in (Operation.SEND_STREAMING_MESSAGE, Operation.SUBSCRIBE_TO_TASK)


METHODS_V1: dict[str, Operation] = {op.value: op for op in Operation}
METHODS_V03: dict[str, Operation] = {
    "message/send": Operation.SEND_MESSAGE,
    "message/stream": Operation.SEND_STREAMING_MESSAGE,
    "tasks/get": Operation.GET_TASK,
    "tasks/cancel": Operation.CANCEL_TASK,
    "tasks/resubscribe": Operation.SUBSCRIBE_TO_TASK,
    "tasks/pushNotificationConfig/set": Operation.CREATE_PUSH_CONFIG,
    "tasks/pushNotificationConfig/get": Operation.GET_PUSH_CONFIG,
    "tasks/pushNotificationConfig/list": Operation.LIST_PUSH_CONFIGS,
    "tasks/pushNotificationConfig/delete": Operation.DELETE_PUSH_CONFIG,
    "agent/getAuthenticatedExtendedCard": Operation.GET_EXTENDED_CARD,
}
"""0.3 method names. 0.3 has no ListTasks."""
V03_METHOD_OF: dict[Operation, str] = {op: name for name, op in METHODS_V03.items()}

PARAMS_V1: dict[Operation, type[Any]] = {
    Operation.SEND_MESSAGE: SendMessageRequest,
    Operation.SEND_STREAMING_MESSAGE: SendMessageRequest,
    Operation.GET_TASK: GetTaskRequest,
    Operation.LIST_TASKS: ListTasksRequest,
    Operation.CANCEL_TASK: CancelTaskRequest,
    Operation.SUBSCRIBE_TO_TASK: SubscribeToTaskRequest,
    Operation.CREATE_PUSH_CONFIG: TaskPushNotificationConfig,
    Operation.GET_PUSH_CONFIG: GetTaskPushNotificationConfigRequest,
    Operation.LIST_PUSH_CONFIGS: ListTaskPushNotificationConfigsRequest,
    Operation.DELETE_PUSH_CONFIG: DeleteTaskPushNotificationConfigRequest,
    Operation.GET_EXTENDED_CARD: GetExtendedAgentCardRequest,
}
"""The 1.0 params Struct of each operation."""

RESULTS_V1: dict[Operation, type[Any]] = {
    Operation.SEND_MESSAGE: SendMessageResponse,
    Operation.SEND_STREAMING_MESSAGE: StreamResponse,
    Operation.GET_TASK: Task,
    Operation.LIST_TASKS: ListTasksResponse,
    Operation.CANCEL_TASK: Task,
    Operation.SUBSCRIBE_TO_TASK: StreamResponse,
    Operation.CREATE_PUSH_CONFIG: TaskPushNotificationConfig,
    Operation.GET_PUSH_CONFIG: TaskPushNotificationConfig,
    Operation.LIST_PUSH_CONFIGS: ListTaskPushNotificationConfigsResponse,
    Operation.DELETE_PUSH_CONFIG: type(None),
    Operation.GET_EXTENDED_CARD: AgentCard,
}
"""The 1.0 ``result`` type of each operation (per SSE event for streaming ones)."""


class JsonRpcRequest(msgspec.Struct, kw_only=True):
    """A JSON-RPC 2.0 request; ``jsonrpc`` is always written. A missing ``id`` (a notification) is UNSET."""

    method: str
    jsonrpc: str = "2.0"
    id: str | int | UnsetType | None = UNSET
    params: Any = UNSET


class JsonRpcErrorObject(msgspec.Struct, omit_defaults=True, kw_only=True):
    code: int
    message: str
    data: Any = None


class JsonRpcResponse(msgspec.Struct, kw_only=True):
    """A JSON-RPC 2.0 response: ``id`` is always written (``null`` included), then result or error."""

    id: str | int | None = None
    jsonrpc: str = "2.0"
    result: Any = UNSET
    error: JsonRpcErrorObject | UnsetType = UNSET


class JsonRpcRequestError(A2AProtocolError):
    """The body is not a usable JSON-RPC request; ``request_id`` is what to answer with."""

    def __init__(self, error: A2AProtocolError, request_id: RequestId) -> None:
        super().__init__(error.spec, error.message, error.data)
        self.request_id = request_id


@dataclass(frozen=True, slots=True)
class MethodRef:
    """A resolved method: the operation and whether it was named in the 0.3 dialect."""

    name: str
    operation: Operation
    legacy: bool


def _usable_id(raw: object) -> RequestId:
    if isinstance(raw, bool) or not isinstance(raw, str | int | None):
        return None
    return raw


def parse_request(body: bytes | str) -> JsonRpcRequest:
    """Decode and check a JSON-RPC request body; raises ``JsonRpcRequestError`` with the id to echo."""
    try:
        obj = codec.decode(body)
    except msgspec.DecodeError as exc:
        raise JsonRpcRequestError(A2AProtocolError(JSON_PARSE_ERROR, str(exc)), None) from exc
    if isinstance(obj, list):
        raise JsonRpcRequestError(A2AProtocolError(INVALID_REQUEST, "Batch requests are not supported"), None)
    if not isinstance(obj, dict):
        raise JsonRpcRequestError(A2AProtocolError(INVALID_REQUEST, "request must be a JSON object"), None)
    request_id = _usable_id(obj.get("id"))
    if obj.get("jsonrpc") != "2.0":
        error = A2AProtocolError(INVALID_REQUEST, "Invalid request: 'jsonrpc' must be exactly '2.0'")
        raise JsonRpcRequestError(error, request_id)
    raw_id = obj.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int | None):
        error = A2AProtocolError(INVALID_REQUEST, "Invalid request: id must be a string, integer, or null")
        raise JsonRpcRequestError(error, None)
    if not isinstance(obj.get("method"), str) or not obj["method"]:
        raise JsonRpcRequestError(A2AProtocolError(INVALID_REQUEST, "Method is required"), request_id)
    try:
        return codec.convert(obj, JsonRpcRequest)
    except msgspec.ValidationError as exc:
        raise JsonRpcRequestError(A2AProtocolError(INVALID_REQUEST, str(exc)), request_id) from exc


def resolve_method(name: str) -> MethodRef:
    """The operation a method name calls; raises ``A2AProtocolError(METHOD_NOT_FOUND)``."""
    if name in METHODS_V03:
        return MethodRef(name, METHODS_V03[name], legacy=True)
    if name in METHODS_V1:
        return MethodRef(name, METHODS_V1[name], legacy=False)
    raise A2AProtocolError(METHOD_NOT_FOUND)


def decode_params(method: MethodRef, params: Any) -> Any:
    """The 1.0 request Struct for a call's ``params``, converting from 0.3 when needed.

    Raises ``A2AProtocolError`` (``INVALID_PARAMS``, or ``INVALID_REQUEST`` for 0.3) whose
    ``__cause__`` is the ``msgspec.ValidationError``.
    """
    body = {} if params is UNSET or params is None else params
    try:
        if method.legacy:
            return params_from_03(method.name, body)
        return codec.convert(body, PARAMS_V1[method.operation])
    except msgspec.ValidationError as exc:
        spec = INVALID_REQUEST if method.legacy else INVALID_PARAMS
        raise A2AProtocolError(spec, f"Invalid params: {exc}") from exc


def success_response(request_id: RequestId, result: Any) -> JsonRpcResponse:
    """A response carrying ``result`` (a wire Struct, builtins or ``None``)."""
    return JsonRpcResponse(id=request_id, result=result)


def error_response(
    request_id: RequestId, error: A2AProtocolError, *, legacy: bool = False
) -> JsonRpcResponse:
    """An error response in the 1.0 shape, or the 0.3 one when ``legacy``."""
    return JsonRpcResponse(
        id=request_id, error=codec.convert(jsonrpc_error_object(error, legacy=legacy), JsonRpcErrorObject)
    )


def result_of(response: Any) -> Any:
    """The ``result`` of a decoded JSON-RPC response; raises ``A2AProtocolError`` for an error response.

    A body that is neither (not an object, or with neither member) raises
    ``msgspec.ValidationError``.
    """
    if not isinstance(response, dict):
        raise msgspec.ValidationError(f"JSON-RPC response must be an object, not {type(response).__name__}")
    error = response.get("error")
    if error:
        raise error_from_jsonrpc(error)
    if "result" not in response:
        raise msgspec.ValidationError("JSON-RPC response has neither 'result' nor 'error'")
    return response["result"]
