"""Conversions between the A2A 0.3 JSON-RPC objects and the 1.0 ones, both ways.

The rules are the official SDK's (``compat/v0_3/conversions.py``):

- parts: 0.3 ``file.bytes``/``file.uri``/``mimeType``/``name`` are 1.0 ``raw``/``url``/
  ``mediaType``/``filename``. A 1.0 ``data`` value that is not an object (a list, a string...)
  travels in 0.3 as ``{"value": X}`` with ``metadata.data_part_compat = true``, and comes back
  unwrapped;
- roles: ``user`` is ``ROLE_USER``, everything else ``agent``; state ``unknown`` is
  ``TASK_STATE_UNSPECIFIED``;
- a 1.0 status update becomes a 0.3 one with ``final`` true exactly in the terminal states;
  an artifact update always carries ``append`` and ``lastChunk``.

The ``*_to_03`` functions serve a 0.3 client from 1.0 handlers; ``*_from_03`` and
``decode_result_03`` let a 1.0 caller read a 0.3 agent's answers. Method params are in
``compat03_params``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .codec import convert
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
from .types03 import (
    Artifact03,
    DataPart03,
    FileContent03,
    FilePart03,
    Message03,
    Part03,
    StreamResult03,
    Task03,
    TaskArtifactUpdateEvent03,
    TaskState03,
    TaskStatus03,
    TaskStatusUpdateEvent03,
    TextPart03,
)

__all__ = [
    "artifact_from_03",
    "artifact_to_03",
    "decode_result_03",
    "infer_part_kinds",
    "message_from_03",
    "message_to_03",
    "part_from_03",
    "part_to_03",
    "send_result_from_03",
    "send_result_to_03",
    "status_from_03",
    "status_to_03",
    "stream_result_from_03",
    "stream_result_to_03",
    "task_from_03",
    "task_to_03",
]

DATA_PART_COMPAT = "data_part_compat"

_STATE_TO_CORE: dict[TaskState03, TaskState] = {
    "unknown": "TASK_STATE_UNSPECIFIED",
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "canceled": "TASK_STATE_CANCELED",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "rejected": "TASK_STATE_REJECTED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
}
_STATE_TO_03: dict[TaskState, TaskState03] = {core: legacy for legacy, core in _STATE_TO_CORE.items()}


# Parts, messages, tasks, events ---------------------------------------------------------


def part_from_03(part: Part03) -> Part:
    match part:
        case TextPart03():
            return Part(text=part.text, metadata=part.metadata)
        case DataPart03():
            metadata = dict(part.metadata or {})
            wrapped = bool(metadata.pop(DATA_PART_COMPAT, False))
            data = part.data.get("value") if wrapped else part.data
            return Part(data=data, metadata=metadata or None)
        case FilePart03():
            f = part.file
            if f.content is not None:
                return Part(raw=f.content, media_type=f.mime_type, filename=f.name, metadata=part.metadata)
            return Part(url=f.uri, media_type=f.mime_type, filename=f.name, metadata=part.metadata)
    raise TypeError(f"not a 0.3 part: {type(part).__name__}")


def part_to_03(part: Part) -> Part03:
    if part.text is not None:
        return TextPart03(text=part.text, metadata=part.metadata)
    if part.raw is not None or part.url is not None:
        file = FileContent03(content=part.raw, uri=part.url, mime_type=part.media_type, name=part.filename)
        return FilePart03(file=file, metadata=part.metadata)
    if isinstance(part.data, dict):
        return DataPart03(data=part.data, metadata=part.metadata)
    return DataPart03(data={"value": part.data}, metadata={**(part.metadata or {}), DATA_PART_COMPAT: True})


def message_from_03(message: Message03) -> Message:
    role: Role = "ROLE_USER" if message.role == "user" else "ROLE_AGENT"
    return Message(
        message_id=message.message_id,
        context_id=message.context_id,
        task_id=message.task_id,
        role=role,
        parts=[part_from_03(p) for p in message.parts],
        metadata=message.metadata or None,
        extensions=message.extensions,
        reference_task_ids=message.reference_task_ids,
    )


def message_to_03(message: Message) -> Message03:
    return Message03(
        message_id=message.message_id,
        context_id=message.context_id,
        task_id=message.task_id,
        role="user" if message.role == "ROLE_USER" else "agent",
        parts=[part_to_03(p) for p in message.parts],
        metadata=message.metadata or None,
        extensions=message.extensions,
        reference_task_ids=message.reference_task_ids,
    )


def status_from_03(status: TaskStatus03) -> TaskStatus:
    message = message_from_03(status.message) if status.message is not None else None
    return TaskStatus(state=_STATE_TO_CORE[status.state], message=message, timestamp=status.timestamp)


def status_to_03(status: TaskStatus) -> TaskStatus03:
    message = message_to_03(status.message) if status.message is not None else None
    return TaskStatus03(state=_STATE_TO_03[status.state], message=message, timestamp=status.timestamp)


def artifact_from_03(artifact: Artifact03) -> Artifact:
    return Artifact(
        artifact_id=artifact.artifact_id,
        name=artifact.name,
        description=artifact.description,
        parts=[part_from_03(p) for p in artifact.parts],
        metadata=artifact.metadata or None,
        extensions=artifact.extensions,
    )


def artifact_to_03(artifact: Artifact) -> Artifact03:
    return Artifact03(
        artifact_id=artifact.artifact_id,
        name=artifact.name,
        description=artifact.description,
        parts=[part_to_03(p) for p in artifact.parts],
        metadata=artifact.metadata,
        extensions=artifact.extensions,
    )


def task_from_03(task: Task03) -> Task:
    return Task(
        id=task.id,
        context_id=task.context_id,
        status=status_from_03(task.status),
        artifacts=[artifact_from_03(a) for a in task.artifacts],
        history=[message_from_03(m) for m in task.history],
        metadata=task.metadata or None,
    )


def task_to_03(task: Task) -> Task03:
    return Task03(
        id=task.id,
        context_id=task.context_id,
        status=status_to_03(task.status),
        history=[message_to_03(m) for m in task.history],
        artifacts=[artifact_to_03(a) for a in task.artifacts],
        metadata=task.metadata,
    )


def stream_result_to_03(response: StreamResponse) -> StreamResult03:
    """The 0.3 ``result`` of one stream event."""
    event = response.event
    match event:
        case Task():
            return task_to_03(event)
        case Message():
            return message_to_03(event)
        case TaskStatusUpdateEvent():
            status = status_to_03(event.status)
            final = event.status.state in TERMINAL_STATES
            return TaskStatusUpdateEvent03(
                task_id=event.task_id,
                context_id=event.context_id,
                status=status,
                final=final,
                metadata=event.metadata,
            )
        case TaskArtifactUpdateEvent():
            return TaskArtifactUpdateEvent03(
                task_id=event.task_id,
                context_id=event.context_id,
                artifact=artifact_to_03(event.artifact),
                append=event.append,
                last_chunk=event.last_chunk,
                metadata=event.metadata,
            )
    raise TypeError(f"not a stream event: {type(event).__name__}")


def stream_result_from_03(result: StreamResult03) -> StreamResponse:
    match result:
        case Task03():
            return stream_response(task_from_03(result))
        case Message03():
            return stream_response(message_from_03(result))
        case TaskStatusUpdateEvent03():
            return stream_response(
                TaskStatusUpdateEvent(
                    task_id=result.task_id,
                    context_id=result.context_id,
                    status=status_from_03(result.status),
                    metadata=result.metadata or None,
                )
            )
        case TaskArtifactUpdateEvent03():
            return stream_response(
                TaskArtifactUpdateEvent(
                    task_id=result.task_id,
                    context_id=result.context_id,
                    artifact=artifact_from_03(result.artifact),
                    append=bool(result.append),
                    last_chunk=bool(result.last_chunk),
                    metadata=result.metadata or None,
                )
            )
    raise TypeError(f"not a 0.3 stream result: {type(result).__name__}")


def send_result_to_03(response: SendMessageResponse) -> Task03 | Message03:
    """The 0.3 ``message/send`` result: the bare task or message."""
    result = response.result
    return task_to_03(result) if isinstance(result, Task) else message_to_03(result)


def send_result_from_03(result: Task03 | Message03) -> SendMessageResponse:
    if isinstance(result, Task03):
        return SendMessageResponse(task=task_from_03(result))
    return SendMessageResponse(message=message_from_03(result))


# Decoding results whose kind may be missing --------------------------------------------

_SKIP = frozenset({"metadata", "data", "params"})


def infer_part_kinds(obj: Any, key: str = "") -> Any:
    """A copy of decoded 0.3 JSON with ``kind`` added to parts that lack it.

    Only lists under a ``parts`` key are touched; ``metadata``, ``data`` and ``params`` values
    are user data and are copied as they are.
    """
    if isinstance(obj, list):
        return [infer_part_kinds(item, key) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: (v if k in _SKIP else infer_part_kinds(v, k)) for k, v in obj.items()}
    if key == "parts" and "kind" not in out:
        kind = "text" if "text" in out else "file" if "file" in out else "data" if "data" in out else None
        if kind:
            out["kind"] = kind
    return out


def _result_kind(obj: dict[str, Any]) -> str | None:
    """The kind of a 0.3 result object, from ``kind`` or, failing that, from its shape."""
    kind = obj.get("kind")
    if isinstance(kind, str):
        return kind
    if "taskId" in obj and "final" in obj:
        return "status-update"
    if "taskId" in obj and "artifact" in obj:
        return "artifact-update"
    if "messageId" in obj:
        return "message"
    if "id" in obj:
        return "task"
    return None


_RESULT_TYPES: dict[str, type[StreamResult03]] = {
    "task": Task03,
    "message": Message03,
    "status-update": TaskStatusUpdateEvent03,
    "artifact-update": TaskArtifactUpdateEvent03,
}


def decode_result_03(obj: Any) -> StreamResult03:
    """Validate a decoded 0.3 ``result`` (send or stream) into its Struct.

    Raises ``msgspec.ValidationError`` for anything that is not one of the four kinds.
    """
    if not isinstance(obj, dict):
        raise msgspec.ValidationError(f"a 0.3 result must be an object, not {type(obj).__name__}")
    kind = _result_kind(obj)
    target = _RESULT_TYPES.get(kind or "")
    if target is None:
        raise msgspec.ValidationError(f"unknown 0.3 result kind {kind!r}")
    body = infer_part_kinds(obj)
    body["kind"] = kind
    return convert(body, target)
