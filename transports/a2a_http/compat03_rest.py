"""The 0.3 HTTP+JSON dialect: protobuf JSON of the 0.3 ``a2a.v1`` messages, to and from 1.0.

0.3 REST (routes under ``/v1``) is not the 0.3 JSON-RPC dialect but the protobuf JSON of the
0.3 proto, with its own spellings:

- a message's parts are under ``content``; a part is ``{"text"}``, ``{"file": {"fileWithUri" |
  "fileWithBytes", "mimeType", "name"}}`` or ``{"data": {"data": {...}}}``; roles are
  ``ROLE_USER``/``ROLE_AGENT``; 0.3 messages have no ``referenceTaskIds``;
- states are 1.0's names except ``TASK_STATE_CANCELLED`` (two Ls);
- a status update carries ``final``;
- the send body is ``{"message" | "request": ..., "configuration": {"acceptedOutputModes",
  "pushNotification", "historyLength", "blocking"}, "metadata"}``; results are
  ``{"task": ...}`` or ``{"message": ...}``, stream events also ``statusUpdate``/``artifactUpdate``.

Two SDK behaviours are reproduced because SDK peers rely on them: ``fileWithBytes`` holds the
base64 *text* of the content as protobuf bytes, so on the wire it is base64 twice; and a
``configuration`` object without ``blocking`` means non-blocking (protobuf's false), while no
``configuration`` at all means blocking. Readers accept snake_case keys too (the SDK's 0.3
REST client sends ``{"request": {"message_id": ...}}``).

The objects are converted by ``compat03`` and ``compat03_params`` with the ``REST_03`` dialect;
this module reads and writes the REST bodies around them. A send result or stream event is
wrapped under the key 1.0 uses for its kind (``task``, ``message``, ``statusUpdate``,
``artifactUpdate``), since the 0.3 proto names its ``oneof`` alike.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from .codec import convert
from .compat03 import (
    send_result_from_03,
    send_result_to_03,
    stream_result_from_03,
    stream_result_to_03,
    task_from_03,
    task_to_03,
)
from .compat03_decode import camelize
from .compat03_params import send_request_from_03, send_request_to_03
from .dialects03 import REST_03, LegacyEvent, LegacyTask, build
from .methods import SendMessageRequest
from .types import (
    Message,
    SendMessageResponse,
    StreamEvent,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)
from .types03 import MessageSendParams03
from .types03_rest import SendMessageRequestPb03, SendMessageResponsePb03, StreamResponsePb03, TaskPb03

__all__ = [
    "camelize",
    "decode_send_request_pb03",
    "decode_send_response_pb03",
    "decode_stream_response_pb03",
    "decode_task_pb03",
    "send_request_to_pb03",
    "send_response_to_pb03",
    "stream_response_to_pb03",
    "task_to_pb03",
]

W = TypeVar("W", bound=msgspec.Struct)

_KEY_OF: dict[type[StreamEvent], str] = {
    Task: "task",
    Message: "message",
    TaskStatusUpdateEvent: "status_update",
    TaskArtifactUpdateEvent: "artifact_update",
}
"""The field of a 1.0 ``StreamResponse``, and of the 0.3 REST wrappers, holding each kind of event."""


# To 1.0 ----------------------------------------------------------------------------------


def decode_send_request_pb03(obj: Any) -> SendMessageRequest:
    """A decoded 0.3 REST send body as the 1.0 request; ``msgspec.ValidationError`` if invalid."""
    body = camelize(obj)
    if isinstance(body, dict) and "message" not in body and "request" in body:
        body["message"] = body.pop("request")
    return send_request_from_03(convert(body, SendMessageRequestPb03), REST_03)


def decode_task_pb03(obj: Any) -> Task:
    return task_from_03(convert(camelize(obj), TaskPb03), REST_03)


def _first(*events: LegacyEvent | None) -> LegacyEvent | None:
    """The event a REST wrapper carries: its first field that is present."""
    return next((event for event in events if event is not None), None)


def decode_send_response_pb03(obj: Any) -> SendMessageResponse:
    r = convert(camelize(obj), SendMessageResponsePb03)
    result = r.task if r.task is not None else r.message
    if result is None:
        raise msgspec.ValidationError("a 0.3 send response needs task or message")
    return send_result_from_03(result, REST_03)


def decode_stream_response_pb03(obj: Any) -> StreamResponse:
    r = convert(camelize(obj), StreamResponsePb03)
    event = _first(r.task, r.message, r.status_update, r.artifact_update)
    if event is None:
        raise msgspec.ValidationError("a 0.3 stream response needs one event")
    return stream_result_from_03(event, REST_03)


# From 1.0 --------------------------------------------------------------------------------


def _wrap(cls: type[W], event: StreamEvent, converted: LegacyEvent) -> W:
    """``cls`` holding ``converted``, the 0.3 form of ``event``, under the key for its kind."""
    return build(cls, **{_KEY_OF[type(event)]: converted})


def task_to_pb03(task: Task) -> LegacyTask:
    """The 0.3 REST task (a ``TaskPb03``)."""
    return task_to_03(task, REST_03)


def send_response_to_pb03(response: SendMessageResponse) -> SendMessageResponsePb03:
    return _wrap(SendMessageResponsePb03, response.result, send_result_to_03(response, REST_03))


def stream_response_to_pb03(response: StreamResponse) -> StreamResponsePb03:
    return _wrap(StreamResponsePb03, response.event, stream_result_to_03(response, REST_03))


def send_request_to_pb03(request: SendMessageRequest) -> MessageSendParams03 | SendMessageRequestPb03:
    """A 0.3 REST send body (a ``SendMessageRequestPb03``) for a 1.0 request (``blocking`` always written)."""
    return send_request_to_03(request, REST_03)
