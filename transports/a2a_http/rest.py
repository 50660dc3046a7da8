"""The HTTP+JSON (REST) binding: routes of 1.0 and 0.3, and the query strings of the GET calls.

1.0 routes sit directly under the interface URL (and again under ``/{tenant}``); 0.3 routes
under ``/v1``. Bodies and results are the same protobuf JSON as the JSON-RPC params and
results (1.0) or the 0.3 protobuf JSON of ``compat03_rest`` (0.3). Success is 200 with
``application/a2a+json`` (1.0) or ``application/json`` (0.3); errors are
``errors.rest_error_body``. Streams are SSE whose ``data`` is the bare ``StreamResponse``.

Query parameters use the camelCase field names; booleans are ``true``/``false``; a repeated
key or a comma-separated value fills a list; for a single-valued field the last one wins;
unknown keys are ignored. Everything the SDK client sends fits in ``ListTasksRequest`` and
``GetTaskRequest``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec

from .codec import convert
from .jsonrpc import Operation
from .methods import GetTaskRequest, ListTasksRequest

__all__ = [
    "ROUTES_V03",
    "ROUTES_V1",
    "Route",
    "get_task_query",
    "list_tasks_query",
    "parse_get_task_query",
    "parse_list_tasks_query",
]


@dataclass(frozen=True, slots=True)
class Route:
    """One REST endpoint: HTTP method, path template (``{id}``, ``{push_id}``), operation."""

    method: str
    path: str
    operation: Operation


ROUTES_V1: tuple[Route, ...] = (
    Route("POST", "/message:send", Operation.SEND_MESSAGE),
    Route("POST", "/message:stream", Operation.SEND_STREAMING_MESSAGE),
    Route("POST", "/tasks/{id}:cancel", Operation.CANCEL_TASK),
    Route("POST", "/tasks/{id}:subscribe", Operation.SUBSCRIBE_TO_TASK),
    Route("GET", "/tasks/{id}:subscribe", Operation.SUBSCRIBE_TO_TASK),
    Route("GET", "/tasks/{id}", Operation.GET_TASK),
    Route("GET", "/tasks", Operation.LIST_TASKS),
    Route("POST", "/tasks/{id}/pushNotificationConfigs", Operation.CREATE_PUSH_CONFIG),
    Route("GET", "/tasks/{id}/pushNotificationConfigs", Operation.LIST_PUSH_CONFIGS),
    Route("GET", "/tasks/{id}/pushNotificationConfigs/{push_id}", Operation.GET_PUSH_CONFIG),
    Route("DELETE", "/tasks/{id}/pushNotificationConfigs/{push_id}", Operation.DELETE_PUSH_CONFIG),
    Route("GET", "/extendedAgentCard", Operation.GET_EXTENDED_CARD),
)
"""1.0 routes. The SDK client subscribes with POST (no body) and cancels with body ``{"id": ...}``."""

ROUTES_V03: tuple[Route, ...] = (
    Route("POST", "/v1/message:send", Operation.SEND_MESSAGE),
    Route("POST", "/v1/message:stream", Operation.SEND_STREAMING_MESSAGE),
    Route("POST", "/v1/tasks/{id}:cancel", Operation.CANCEL_TASK),
    Route("POST", "/v1/tasks/{id}:subscribe", Operation.SUBSCRIBE_TO_TASK),
    Route("GET", "/v1/tasks/{id}:subscribe", Operation.SUBSCRIBE_TO_TASK),
    Route("GET", "/v1/tasks/{id}", Operation.GET_TASK),
    Route("POST", "/v1/tasks/{id}/pushNotificationConfigs", Operation.CREATE_PUSH_CONFIG),
    Route("GET", "/v1/tasks/{id}/pushNotificationConfigs", Operation.LIST_PUSH_CONFIGS),
    Route("GET", "/v1/tasks/{id}/pushNotificationConfigs/{push_id}", Operation.GET_PUSH_CONFIG),
    Route("GET", "/v1/card", Operation.GET_EXTENDED_CARD),
)
"""0.3 routes (no ListTasks, no DELETE). The 0.3 SDK client tries POST for subscribe, then GET on 405."""

Query = Mapping[str, Sequence[str]]
"""Query parameters as key to all its values (``urllib.parse.parse_qs`` shape)."""

_BOOL = {"true": True, "false": False}


def _scalar(query: Query, key: str) -> str | None:
    values = query.get(key)
    return values[-1] if values else None


def _collect(query: Query, fields: dict[str, str]) -> dict[str, object]:
    """Builtins for ``convert``: ints and bools parsed, other values kept as strings."""
    out: dict[str, object] = {}
    for key, kind in fields.items():
        raw = _scalar(query, key)
        if raw is None:
            continue
        if kind == "int":
            if not raw.isascii() or not raw.lstrip("-").isdigit() or len(raw) > 18:
                raise msgspec.ValidationError(f"query parameter {key!r} must be an integer")
            out[key] = int(raw)
        elif kind == "bool":
            out[key] = _BOOL.get(raw.lower(), False)
        else:
            out[key] = raw
    return out


def parse_get_task_query(task_id: str, query: Query) -> GetTaskRequest:
    """``GET /tasks/{id}?historyLength=N`` as a ``GetTaskRequest``; bad values raise ``ValidationError``."""
    body = _collect(query, {"historyLength": "int"})
    body["id"] = task_id
    return convert(body, GetTaskRequest)


def parse_list_tasks_query(query: Query) -> ListTasksRequest:
    """``GET /tasks?...`` as a ``ListTasksRequest``; bad values raise ``ValidationError``."""
    fields = {
        "contextId": "str",
        "status": "str",
        "pageSize": "int",
        "pageToken": "str",
        "historyLength": "int",
        "statusTimestampAfter": "str",
        "includeArtifacts": "bool",
    }
    return convert(_collect(query, fields), ListTasksRequest)


def get_task_query(request: GetTaskRequest) -> dict[str, str]:
    """Query parameters for ``GET /tasks/{id}``."""
    return {} if request.history_length is None else {"historyLength": str(request.history_length)}


def list_tasks_query(request: ListTasksRequest) -> dict[str, str]:
    """Query parameters for ``GET /tasks`` (what the SDK's REST client sends)."""
    query: dict[str, str] = {}
    pairs: list[tuple[str, object]] = [
        ("contextId", request.context_id or None),
        ("status", request.status),
        ("pageSize", request.page_size),
        ("pageToken", request.page_token or None),
        ("historyLength", request.history_length),
        ("statusTimestampAfter", request.status_timestamp_after or None),
        ("includeArtifacts", request.include_artifacts),
    ]
    for key, value in pairs:
        if value is None:
            continue
        query[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return query
