"""A2A protocol errors: the table of codes, and their JSON-RPC and REST shapes in both versions.

Every A2A error has a JSON-RPC code, an HTTP status, a gRPC status name and a ``reason``
(the official SDK's ``utils/errors.py``). On the wire:

- 1.0 JSON-RPC: ``{"code", "message", "data": [ErrorInfo, BadRequest?]}`` where
  ``ErrorInfo = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason",
  "domain": "a2a-protocol.org", "metadata": {...}}``; always HTTP 200.
- 0.3 JSON-RPC: ``{"code", "message", "data": <the raw data object or null>}``; codes 0.3
  does not know (-32008, -32009) are sent as -32603.
- REST (both versions): HTTP status from the table and
  ``{"error": {"code": <http status>, "status": <gRPC name>, "message", "details": [ErrorInfo]}}``.

Clients map a JSON-RPC error back by ``code`` and a REST error by the first ErrorInfo's
``reason``; ``metadata`` becomes ``A2AProtocolError.data``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTENT_TYPE_NOT_SUPPORTED",
    "ERRORS",
    "ERROR_INFO_TYPE",
    "EXTENDED_CARD_NOT_CONFIGURED",
    "EXTENSION_SUPPORT_REQUIRED",
    "INTERNAL_ERROR",
    "INVALID_AGENT_RESPONSE",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSON_PARSE_ERROR",
    "METHOD_NOT_FOUND",
    "PUSH_NOT_SUPPORTED",
    "TASK_NOT_CANCELABLE",
    "TASK_NOT_FOUND",
    "UNSUPPORTED_OPERATION",
    "VERSION_NOT_SUPPORTED",
    "A2AProtocolError",
    "ErrorSpec",
    "error_from_jsonrpc",
    "error_from_rest",
    "jsonrpc_error_object",
    "rest_error_body",
]

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
ERROR_DOMAIN = "a2a-protocol.org"


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """One A2A error kind and how each binding spells it."""

    name: str
    code: int
    http_status: int
    grpc_status: str
    reason: str
    message: str
    in_v03: bool = True
    """Whether A2A 0.3 defines this JSON-RPC code."""


TASK_NOT_FOUND = ErrorSpec("TaskNotFoundError", -32001, 404, "NOT_FOUND", "TASK_NOT_FOUND", "Task not found")
TASK_NOT_CANCELABLE = ErrorSpec(
    "TaskNotCancelableError",
    -32002,
    400,
    "FAILED_PRECONDITION",
    "TASK_NOT_CANCELABLE",
    "Task cannot be canceled",
)
PUSH_NOT_SUPPORTED = ErrorSpec(
    "PushNotificationNotSupportedError",
    -32003,
    400,
    "FAILED_PRECONDITION",
    "PUSH_NOTIFICATION_NOT_SUPPORTED",
    "Push Notification is not supported",
)
UNSUPPORTED_OPERATION = ErrorSpec(
    "UnsupportedOperationError",
    -32004,
    400,
    "FAILED_PRECONDITION",
    "UNSUPPORTED_OPERATION",
    "This operation is not supported",
)
CONTENT_TYPE_NOT_SUPPORTED = ErrorSpec(
    "ContentTypeNotSupportedError",
    -32005,
    400,
    "INVALID_ARGUMENT",
    "CONTENT_TYPE_NOT_SUPPORTED",
    "Incompatible content types",
)
INVALID_AGENT_RESPONSE = ErrorSpec(
    "InvalidAgentResponseError", -32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE", "Invalid agent response"
)
EXTENDED_CARD_NOT_CONFIGURED = ErrorSpec(
    "ExtendedAgentCardNotConfiguredError",
    -32007,
    400,
    "FAILED_PRECONDITION",
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    "Authenticated Extended Card is not configured",
)
EXTENSION_SUPPORT_REQUIRED = ErrorSpec(
    "ExtensionSupportRequiredError",
    -32008,
    400,
    "FAILED_PRECONDITION",
    "EXTENSION_SUPPORT_REQUIRED",
    "Extension support required",
    in_v03=False,
)
VERSION_NOT_SUPPORTED = ErrorSpec(
    "VersionNotSupportedError",
    -32009,
    400,
    "FAILED_PRECONDITION",
    "VERSION_NOT_SUPPORTED",
    "Version not supported",
    in_v03=False,
)
INVALID_PARAMS = ErrorSpec(
    "InvalidParamsError", -32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "Invalid params"
)
INVALID_REQUEST = ErrorSpec(
    "InvalidRequestError", -32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST", "Invalid Request"
)
METHOD_NOT_FOUND = ErrorSpec(
    "MethodNotFoundError", -32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND", "Method not found"
)
INTERNAL_ERROR = ErrorSpec("InternalError", -32603, 500, "INTERNAL", "INTERNAL_ERROR", "Internal error")
JSON_PARSE_ERROR = ErrorSpec(
    "JSONParseError", -32700, 400, "INVALID_ARGUMENT", "INVALID_REQUEST", "Parse error"
)
"""Unparseable JSON. REST reports it as 400 ``INVALID_REQUEST``, as the SDK does for a protobuf ParseError."""

ERRORS: tuple[ErrorSpec, ...] = (
    TASK_NOT_FOUND,
    TASK_NOT_CANCELABLE,
    PUSH_NOT_SUPPORTED,
    UNSUPPORTED_OPERATION,
    CONTENT_TYPE_NOT_SUPPORTED,
    INVALID_AGENT_RESPONSE,
    EXTENDED_CARD_NOT_CONFIGURED,
    EXTENSION_SUPPORT_REQUIRED,
    VERSION_NOT_SUPPORTED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    INTERNAL_ERROR,
    JSON_PARSE_ERROR,
)
BY_CODE: dict[int, ErrorSpec] = {spec.code: spec for spec in ERRORS}
BY_REASON: dict[str, ErrorSpec] = {spec.reason: spec for spec in ERRORS if spec is not JSON_PARSE_ERROR}


class A2AProtocolError(Exception):
    """An A2A error raised by a handler or received from a peer.

    ``data`` is the structured detail (the SDK's ``A2AError.data``): ErrorInfo ``metadata``
    on 1.0, the raw ``data`` member on 0.3. ``code`` is the JSON-RPC code actually seen,
    which for an unknown peer code differs from ``spec.code`` (then ``INTERNAL_ERROR``).
    """

    def __init__(
        self,
        spec: ErrorSpec,
        message: str | None = None,
        data: dict[str, Any] | None = None,
        *,
        code: int | None = None,
    ) -> None:
        self.spec = spec
        self.message = message or spec.message
        self.data = data
        self.code = spec.code if code is None else code
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"A2AProtocolError({self.spec.name}, {self.message!r}, data={self.data!r})"


def _error_info(spec: ErrorSpec, metadata: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "@type": ERROR_INFO_TYPE,
        "reason": spec.reason,
        "domain": ERROR_DOMAIN,
        "metadata": metadata or {},
    }


def _details(error: A2AProtocolError) -> list[dict[str, Any]]:
    details = [_error_info(error.spec, error.data)]
    violations = (error.data or {}).get("errors") if error.spec is INVALID_PARAMS else None
    if isinstance(violations, list) and violations:
        details.append(
            {
                "@type": BAD_REQUEST_TYPE,
                "fieldViolations": [
                    {"field": str(v.get("field", "")), "description": str(v.get("message", ""))}
                    for v in violations
                    if isinstance(v, dict)
                ],
            }
        )
    return details


def jsonrpc_error_object(error: A2AProtocolError, *, legacy: bool = False) -> dict[str, Any]:
    """The ``error`` member of a JSON-RPC response, in the 1.0 shape or (``legacy``) the 0.3 one."""
    if legacy:
        code = error.spec.code if error.spec.in_v03 else INTERNAL_ERROR.code
        return {"code": code, "message": error.message, "data": error.data}
    return {"code": error.spec.code, "message": error.message, "data": _details(error)}


def rest_error_body(error: A2AProtocolError) -> tuple[int, dict[str, Any]]:
    """HTTP status and JSON body of a REST error response (both protocol versions)."""
    spec = error.spec
    body = {
        "code": spec.http_status,
        "status": spec.grpc_status,
        "message": error.message,
        "details": _details(error),
    }
    return spec.http_status, {"error": body}


def _metadata_of(details: object) -> tuple[str | None, dict[str, Any] | None]:
    """``reason`` and ``metadata`` of the first ErrorInfo in a details list."""
    if not isinstance(details, list):
        return None, None
    for item in details:
        if isinstance(item, dict) and item.get("@type") == ERROR_INFO_TYPE:
            reason, metadata = item.get("reason"), item.get("metadata")
            return (
                reason if isinstance(reason, str) else None,
                metadata if isinstance(metadata, dict) and metadata else None,
            )
    return None, None


def error_from_jsonrpc(error: object) -> A2AProtocolError:
    """Map a received JSON-RPC ``error`` member (either version) to an ``A2AProtocolError``.

    Unknown codes and malformed error objects become ``INTERNAL_ERROR`` with the code seen.
    """
    if not isinstance(error, dict):
        return A2AProtocolError(INTERNAL_ERROR, f"malformed JSON-RPC error: {error!r}"[:512])
    code, message, raw = error.get("code"), error.get("message"), error.get("data")
    text = message if isinstance(message, str) else None
    if isinstance(raw, list):
        _, data = _metadata_of(raw)
    else:
        data = raw if isinstance(raw, dict) else None
    spec = BY_CODE.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
    if spec is None:
        seen = code if isinstance(code, int) and not isinstance(code, bool) else None
        return A2AProtocolError(INTERNAL_ERROR, text or f"JSON-RPC error {code!r}", data, code=seen)
    return A2AProtocolError(spec, text, data)


def error_from_rest(status: int, body: object) -> A2AProtocolError:
    """Map a REST error response to an ``A2AProtocolError``, as the SDK's REST client does.

    The first ErrorInfo ``reason`` decides; a flat 0.3-style ``{"type": "TaskNotFoundError"}``
    is also understood; otherwise 404 is ``METHOD_NOT_FOUND`` and anything else ``INTERNAL_ERROR``.
    """
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = error.get("message")
        reason, data = _metadata_of(error.get("details"))
        spec = BY_REASON.get(reason) if reason else None
        if spec is not None:
            return A2AProtocolError(spec, message if isinstance(message, str) else None, data)
    if isinstance(body, dict) and isinstance(body.get("type"), str):
        by_name = {spec.name: spec for spec in ERRORS}
        spec = by_name.get(body["type"])
        if spec is not None:
            message = body.get("message")
            return A2AProtocolError(spec, message if isinstance(message, str) else None)
    fallback = METHOD_NOT_FOUND if status == 404 else INTERNAL_ERROR
    return A2AProtocolError(fallback, f"HTTP {status}")
