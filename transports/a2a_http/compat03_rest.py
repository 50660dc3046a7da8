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
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec

from .codec import convert
from .methods import SendMessageConfiguration, SendMessageRequest
from .types import (
    TERMINAL_STATES,
    Artifact,
    Message,
    Part,
    Role,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    stream_response,
)
from .types03_rest import (
    ArtifactPb03,
    ArtifactUpdatePb03,
    DataPb03,
    FilePb03,
    MessagePb03,
    PartPb03,
    SendConfigurationPb03,
    SendMessageRequestPb03,
    SendMessageResponsePb03,
    StatePb03,
    StatusPb03,
    StatusUpdatePb03,
    StreamResponsePb03,
    TaskPb03,
)

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

# Key normalisation -----------------------------------------------------------------------


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camelize(obj: Any, key: str = "") -> Any:
    """A copy of decoded protobuf JSON with snake_case keys in camelCase (user data untouched)."""
    if isinstance(obj, list):
        return [camelize(item, key) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict[str, Any] = {}
    for k, v in obj.items():
        name = _camel(k) if isinstance(k, str) else k
        keep = name == "metadata" or (name == "data" and key == "data")
        out[name] = v if keep else camelize(v, name)
    return out


# To 1.0 ----------------------------------------------------------------------------------


def _part(part: PartPb03) -> Part:
    if part.text is not None:
        return Part(text=part.text, metadata=part.metadata)
    if part.file is not None:
        f = part.file
        if f.file_with_uri is not None:
            return Part(url=f.file_with_uri, media_type=f.mime_type, filename=f.name, metadata=part.metadata)
        try:
            raw = base64.b64decode(f.file_with_bytes or b"", validate=True)
        except binascii.Error as exc:
            raise msgspec.ValidationError(f"fileWithBytes does not hold base64 text: {exc}") from None
        return Part(raw=raw, media_type=f.mime_type, filename=f.name, metadata=part.metadata)
    if part.data is not None:
        metadata = dict(part.metadata or {})
        wrapped = bool(metadata.pop("data_part_compat", False))
        data = part.data.data.get("value") if wrapped else part.data.data
        return Part(data=data, metadata=metadata or None)
    raise msgspec.ValidationError("a 0.3 part needs one of text, file, data")


def _message(m: MessagePb03) -> Message:
    if not m.message_id:
        raise msgspec.ValidationError("a message needs a messageId")
    role: Role = "ROLE_USER" if m.role == "ROLE_USER" else "ROLE_AGENT"
    parts = [_part(p) for p in m.content]
    return Message(
        message_id=m.message_id,
        context_id=m.context_id,
        task_id=m.task_id,
        role=role,
        parts=parts,
        metadata=m.metadata or None,
        extensions=m.extensions,
    )


def _state(state: StatePb03) -> TaskState:
    return "TASK_STATE_CANCELED" if state == "TASK_STATE_CANCELLED" else state


def _status(s: StatusPb03 | None) -> TaskStatus:
    s = s or StatusPb03()
    message = _message(s.message) if s.message is not None else None
    return TaskStatus(state=_state(s.state), message=message, timestamp=s.timestamp)


def _artifact(a: ArtifactPb03) -> Artifact:
    parts = [_part(p) for p in a.parts]
    return Artifact(
        artifact_id=a.artifact_id,
        name=a.name,
        description=a.description,
        parts=parts,
        metadata=a.metadata or None,
        extensions=a.extensions,
    )


def _task(t: TaskPb03) -> Task:
    return Task(
        id=t.id,
        context_id=t.context_id,
        status=_status(t.status),
        artifacts=[_artifact(a) for a in t.artifacts],
        history=[_message(m) for m in t.history],
        metadata=t.metadata or None,
    )


def decode_send_request_pb03(obj: Any) -> SendMessageRequest:
    """A decoded 0.3 REST send body as the 1.0 request; ``msgspec.ValidationError`` if invalid."""
    body = camelize(obj)
    if isinstance(body, dict) and "message" not in body and "request" in body:
        body["message"] = body.pop("request")
    req = convert(body, SendMessageRequestPb03)
    config = None
    if req.configuration is not None:
        c = req.configuration
        config = SendMessageConfiguration(
            accepted_output_modes=c.accepted_output_modes,
            history_length=c.history_length or None,
            return_immediately=not c.blocking,
        )
    return SendMessageRequest(message=_message(req.message), configuration=config, metadata=req.metadata)


def decode_task_pb03(obj: Any) -> Task:
    return _task(convert(camelize(obj), TaskPb03))


def decode_send_response_pb03(obj: Any) -> SendMessageResponse:
    r = convert(camelize(obj), SendMessageResponsePb03)
    if r.task is not None:
        return SendMessageResponse(task=_task(r.task))
    if r.message is not None:
        return SendMessageResponse(message=_message(r.message))
    raise msgspec.ValidationError("a 0.3 send response needs task or message")


def decode_stream_response_pb03(obj: Any) -> StreamResponse:
    r = convert(camelize(obj), StreamResponsePb03)
    if r.task is not None:
        return stream_response(_task(r.task))
    if r.message is not None:
        return stream_response(_message(r.message))
    if (s := r.status_update) is not None:
        return stream_response(
            TaskStatusUpdateEvent(
                task_id=s.task_id, context_id=s.context_id, status=_status(s.status), metadata=s.metadata
            )
        )
    if (a := r.artifact_update) is not None and a.artifact is not None:
        return stream_response(
            TaskArtifactUpdateEvent(
                task_id=a.task_id,
                context_id=a.context_id,
                artifact=_artifact(a.artifact),
                append=a.append,
                last_chunk=a.last_chunk,
                metadata=a.metadata,
            )
        )
    raise msgspec.ValidationError("a 0.3 stream response needs one event")


# From 1.0 --------------------------------------------------------------------------------


def _part_pb03(part: Part) -> PartPb03:
    if part.text is not None:
        return PartPb03(text=part.text, metadata=part.metadata)
    if part.raw is not None:
        inner = base64.b64encode(part.raw)
        file = FilePb03(file_with_bytes=inner, mime_type=part.media_type, name=part.filename)
        return PartPb03(file=file, metadata=part.metadata)
    if part.url is not None:
        file = FilePb03(file_with_uri=part.url, mime_type=part.media_type, name=part.filename)
        return PartPb03(file=file, metadata=part.metadata)
    if isinstance(part.data, dict):
        return PartPb03(data=DataPb03(data=part.data), metadata=part.metadata)
    metadata = {**(part.metadata or {}), "data_part_compat": True}
    return PartPb03(data=DataPb03(data={"value": part.data}), metadata=metadata)


def _message_pb03(m: Message) -> MessagePb03:
    return MessagePb03(
        message_id=m.message_id,
        context_id=m.context_id,
        task_id=m.task_id,
        role="ROLE_USER" if m.role == "ROLE_USER" else "ROLE_AGENT",
        content=[_part_pb03(p) for p in m.parts],
        metadata=m.metadata,
        extensions=m.extensions,
    )


def _status_pb03(s: TaskStatus) -> StatusPb03:
    state: StatePb03 = "TASK_STATE_CANCELLED" if s.state == "TASK_STATE_CANCELED" else s.state
    message = _message_pb03(s.message) if s.message is not None else None
    return StatusPb03(state=state, message=message, timestamp=s.timestamp)


def _artifact_pb03(a: Artifact) -> ArtifactPb03:
    return ArtifactPb03(
        artifact_id=a.artifact_id,
        name=a.name,
        description=a.description,
        parts=[_part_pb03(p) for p in a.parts],
        metadata=a.metadata,
        extensions=a.extensions,
    )


def task_to_pb03(t: Task) -> TaskPb03:
    return TaskPb03(
        id=t.id,
        context_id=t.context_id,
        status=_status_pb03(t.status),
        artifacts=[_artifact_pb03(a) for a in t.artifacts],
        history=[_message_pb03(m) for m in t.history],
        metadata=t.metadata,
    )


def send_response_to_pb03(response: SendMessageResponse) -> SendMessageResponsePb03:
    result = response.result
    if isinstance(result, Task):
        return SendMessageResponsePb03(task=task_to_pb03(result))
    return SendMessageResponsePb03(message=_message_pb03(result))


def stream_response_to_pb03(response: StreamResponse) -> StreamResponsePb03:
    event = response.event
    match event:
        case Task():
            return StreamResponsePb03(task=task_to_pb03(event))
        case Message():
            return StreamResponsePb03(message=_message_pb03(event))
        case TaskStatusUpdateEvent():
            update = StatusUpdatePb03(
                task_id=event.task_id,
                context_id=event.context_id,
                status=_status_pb03(event.status),
                final=event.status.state in TERMINAL_STATES,
                metadata=event.metadata,
            )
            return StreamResponsePb03(status_update=update)
        case TaskArtifactUpdateEvent():
            artifact = ArtifactUpdatePb03(
                task_id=event.task_id,
                context_id=event.context_id,
                artifact=_artifact_pb03(event.artifact),
                append=event.append,
                last_chunk=event.last_chunk,
                metadata=event.metadata,
            )
            return StreamResponsePb03(artifact_update=artifact)
    raise TypeError(f"not a stream event: {type(event).__name__}")


def send_request_to_pb03(request: SendMessageRequest) -> SendMessageRequestPb03:
    """A 0.3 REST send body for a 1.0 request (``blocking`` always written)."""
    c = request.configuration or SendMessageConfiguration()
    config = SendConfigurationPb03(
        accepted_output_modes=c.accepted_output_modes,
        history_length=c.history_length or 0,
        blocking=not c.return_immediately,
    )
    return SendMessageRequestPb03(
        message=_message_pb03(request.message), configuration=config, metadata=request.metadata
    )
