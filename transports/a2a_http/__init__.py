"""A2A over HTTP: the wire codec for the public A2A protocol (1.0, and the 0.3 the official SDK still speaks).

The official Python SDK installs a top-level ``a2a`` package of its own, so it cannot be
imported next to this project; interoperability is on the wire only, and this package is
that wire: msgspec Structs for every JSON object, both JSON-RPC and REST bindings, the three
JSON dialects and conversions between them, the error table, and SSE framing.

- ``types``, ``methods``, ``card``: the 1.0 objects (protobuf JSON mapping of ``a2a.v1``);
- ``jsonrpc``, ``rest``: the two bindings (envelopes, method names, routes, query strings);
- ``versions``: ``A2A-Version`` and the other fixed names;
- ``errors``: codes, HTTP statuses, reasons, and the error bodies of each version;
- ``sse``: writing and reading ``text/event-stream``;
- ``types03``/``types03_rest``: the 0.3 JSON-RPC and REST dialects' objects; ``dialects03``:
  what differs between the two, as data; ``compat03``/``compat03_parts``/``compat03_params``:
  the conversions of objects and requests, one per object for both dialects;
  ``compat03_decode``: raw 0.3 JSON readied for validation; ``compat03_rest``: the REST bodies;
  ``compat03_card``: cards of both.
"""

from . import compat03 as compat03
from . import compat03_params as compat03_params
from . import compat03_rest as compat03_rest
from . import types03 as types03
from .card import BINDING_GRPC as BINDING_GRPC
from .card import BINDING_HTTP_JSON as BINDING_HTTP_JSON
from .card import BINDING_JSONRPC as BINDING_JSONRPC
from .card import AgentCapabilities as AgentCapabilities
from .card import AgentCard as AgentCard
from .card import AgentCardSignature as AgentCardSignature
from .card import AgentExtension as AgentExtension
from .card import AgentInterface as AgentInterface
from .card import AgentProvider as AgentProvider
from .card import AgentSkill as AgentSkill
from .card import APIKeySecurityScheme as APIKeySecurityScheme
from .card import HTTPAuthSecurityScheme as HTTPAuthSecurityScheme
from .card import OAuth2SecurityScheme as OAuth2SecurityScheme
from .card import OAuthFlows as OAuthFlows
from .card import SecurityRequirement as SecurityRequirement
from .card import SecurityScheme as SecurityScheme
from .card import StringList as StringList
from .codec import convert as convert
from .codec import decode as decode
from .codec import encode as encode
from .codec import to_builtins as to_builtins
from .compat03_card import agent_card_json as agent_card_json
from .compat03_card import card_to_03 as card_to_03
from .compat03_card import parse_agent_card as parse_agent_card
from .errors import A2AProtocolError as A2AProtocolError
from .errors import ErrorSpec as ErrorSpec
from .errors import error_from_jsonrpc as error_from_jsonrpc
from .errors import error_from_rest as error_from_rest
from .errors import jsonrpc_error_object as jsonrpc_error_object
from .errors import rest_error_body as rest_error_body
from .jsonrpc import JsonRpcRequest as JsonRpcRequest
from .jsonrpc import JsonRpcRequestError as JsonRpcRequestError
from .jsonrpc import JsonRpcResponse as JsonRpcResponse
from .jsonrpc import MethodRef as MethodRef
from .jsonrpc import Operation as Operation
from .jsonrpc import decode_params as decode_params
from .jsonrpc import error_response as error_response
from .jsonrpc import parse_request as parse_request
from .jsonrpc import resolve_method as resolve_method
from .jsonrpc import result_of as result_of
from .jsonrpc import success_response as success_response
from .methods import AuthenticationInfo as AuthenticationInfo
from .methods import CancelTaskRequest as CancelTaskRequest
from .methods import DeleteTaskPushNotificationConfigRequest as DeleteTaskPushNotificationConfigRequest
from .methods import GetExtendedAgentCardRequest as GetExtendedAgentCardRequest
from .methods import GetTaskPushNotificationConfigRequest as GetTaskPushNotificationConfigRequest
from .methods import GetTaskRequest as GetTaskRequest
from .methods import ListTaskPushNotificationConfigsRequest as ListTaskPushNotificationConfigsRequest
from .methods import ListTaskPushNotificationConfigsResponse as ListTaskPushNotificationConfigsResponse
from .methods import ListTasksRequest as ListTasksRequest
from .methods import ListTasksResponse as ListTasksResponse
from .methods import SendMessageConfiguration as SendMessageConfiguration
from .methods import SendMessageRequest as SendMessageRequest
from .methods import SubscribeToTaskRequest as SubscribeToTaskRequest
from .methods import TaskPushNotificationConfig as TaskPushNotificationConfig
from .rest import ROUTES_V03 as ROUTES_V03
from .rest import ROUTES_V1 as ROUTES_V1
from .rest import Route as Route
from .rest import get_task_query as get_task_query
from .rest import list_tasks_query as list_tasks_query
from .rest import parse_get_task_query as parse_get_task_query
from .rest import parse_list_tasks_query as parse_list_tasks_query
from .sse import SSEDecoder as SSEDecoder
from .sse import SSEError as SSEError
from .sse import SSEEvent as SSEEvent
from .sse import format_comment as format_comment
from .sse import format_event as format_event
from .sse import iter_sse_bytes as iter_sse_bytes
from .sse import iter_sse_lines as iter_sse_lines
from .types import INTERRUPTED_STATES as INTERRUPTED_STATES
from .types import TERMINAL_STATES as TERMINAL_STATES
from .types import Artifact as Artifact
from .types import Message as Message
from .types import Part as Part
from .types import Role as Role
from .types import SendMessageResponse as SendMessageResponse
from .types import StreamEvent as StreamEvent
from .types import StreamResponse as StreamResponse
from .types import Task as Task
from .types import TaskArtifactUpdateEvent as TaskArtifactUpdateEvent
from .types import TaskState as TaskState
from .types import TaskStatus as TaskStatus
from .types import TaskStatusUpdateEvent as TaskStatusUpdateEvent
from .types import send_message_response as send_message_response
from .types import stream_response as stream_response
from .versions import A2A_JSON_MEDIA_TYPE as A2A_JSON_MEDIA_TYPE
from .versions import AGENT_CARD_PATH as AGENT_CARD_PATH
from .versions import EXTENSIONS_HEADER as EXTENSIONS_HEADER
from .versions import LEGACY_EXTENSIONS_HEADER as LEGACY_EXTENSIONS_HEADER
from .versions import PROTOCOL_VERSION_0_3 as PROTOCOL_VERSION_0_3
from .versions import PROTOCOL_VERSION_1_0 as PROTOCOL_VERSION_1_0
from .versions import SSE_MEDIA_TYPE as SSE_MEDIA_TYPE
from .versions import VERSION_HEADER as VERSION_HEADER
from .versions import is_legacy_version as is_legacy_version
from .versions import request_version as request_version
from .versions import version_compatible as version_compatible

__all__ = [
    "A2A_JSON_MEDIA_TYPE",
    "AGENT_CARD_PATH",
    "BINDING_GRPC",
    "BINDING_HTTP_JSON",
    "BINDING_JSONRPC",
    "EXTENSIONS_HEADER",
    "INTERRUPTED_STATES",
    "LEGACY_EXTENSIONS_HEADER",
    "PROTOCOL_VERSION_0_3",
    "PROTOCOL_VERSION_1_0",
    "ROUTES_V03",
    "ROUTES_V1",
    "SSE_MEDIA_TYPE",
    "TERMINAL_STATES",
    "VERSION_HEADER",
    "A2AProtocolError",
    "APIKeySecurityScheme",
    "AgentCapabilities",
    "AgentCard",
    "AgentCardSignature",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "Artifact",
    "AuthenticationInfo",
    "CancelTaskRequest",
    "DeleteTaskPushNotificationConfigRequest",
    "ErrorSpec",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "HTTPAuthSecurityScheme",
    "JsonRpcRequest",
    "JsonRpcRequestError",
    "JsonRpcResponse",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksRequest",
    "ListTasksResponse",
    "Message",
    "MethodRef",
    "OAuth2SecurityScheme",
    "OAuthFlows",
    "Operation",
    "Part",
    "Role",
    "Route",
    "SSEDecoder",
    "SSEError",
    "SSEEvent",
    "SecurityRequirement",
    "SecurityScheme",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SendMessageResponse",
    "StreamEvent",
    "StreamResponse",
    "StringList",
    "SubscribeToTaskRequest",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskPushNotificationConfig",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "agent_card_json",
    "card_to_03",
    "compat03",
    "compat03_params",
    "compat03_rest",
    "convert",
    "decode",
    "decode_params",
    "encode",
    "error_from_jsonrpc",
    "error_from_rest",
    "error_response",
    "format_comment",
    "format_event",
    "get_task_query",
    "is_legacy_version",
    "iter_sse_bytes",
    "iter_sse_lines",
    "jsonrpc_error_object",
    "list_tasks_query",
    "parse_agent_card",
    "parse_get_task_query",
    "parse_list_tasks_query",
    "parse_request",
    "request_version",
    "resolve_method",
    "rest_error_body",
    "result_of",
    "send_message_response",
    "stream_response",
    "success_response",
    "to_builtins",
    "types03",
    "version_compatible",
]
