"""Conversions between the A2A 0.3 objects and the 1.0 ones, both ways, in either 0.3 dialect.

The rules are the official SDK's (``compat/v0_3/conversions.py``):

- parts: see ``compat03_parts``;
- roles: the dialect's user role is ``ROLE_USER``, everything else the agent's; JSON-RPC's
  state ``unknown`` is ``TASK_STATE_UNSPECIFIED``;
- a 1.0 status update becomes a 0.3 one with ``final`` true exactly in the terminal states;
  an artifact update always carries ``append`` and ``lastChunk``.

Every converter takes the dialect it writes or reads (``dialects03``), JSON-RPC's when none
is named; what differs between the two is data there. The ``*_to_03`` functions serve a 0.3
client from 1.0 handlers; ``*_from_03`` let a 1.0 caller read a 0.3 agent's answers.
Requests are in ``compat03_params``, the REST bodies around these objects in
``compat03_rest``, and reading raw JSON-RPC results (``decode_result_03``) in
``compat03_decode``.
"""

from __future__ import annotations

import msgspec

from .compat03_decode import decode_result_03, infer_part_kinds
from .compat03_parts import part_from_03, part_to_03
from .dialects03 import (
    JSONRPC_03,
    Dialect03,
    LegacyArtifact,
    LegacyArtifactUpdate,
    LegacyEvent,
    LegacyMessage,
    LegacyStatus,
    LegacyStatusUpdate,
    LegacyTask,
    build,
)
from .types import (
    TERMINAL_STATES,
    Artifact,
    Message,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
    stream_response,
)
from .types03 import Message03, Task03, TaskArtifactUpdateEvent03, TaskStatusUpdateEvent03
from .types03_rest import ArtifactUpdatePb03, MessagePb03, StatusUpdatePb03, TaskPb03

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

# Messages, statuses, artifacts, tasks ---------------------------------------------------


def message_to_03(message: Message, dialect: Dialect03 = JSONRPC_03) -> LegacyMessage:
    """A 1.0 message in 0.3 (REST has no ``referenceTaskIds``, so they are not written there)."""
    return build(
        dialect.structs.message,
        message_id=message.message_id,
        context_id=message.context_id,
        task_id=message.task_id,
        role=dialect.user_role if message.role == "ROLE_USER" else dialect.agent_role,
        parts=[part_to_03(p, dialect) for p in message.parts],
        metadata=dialect.metadata_out(message.metadata, "message"),
        extensions=message.extensions,
        reference_task_ids=message.reference_task_ids,
    )


def message_from_03(message: LegacyMessage, dialect: Dialect03 = JSONRPC_03) -> Message:
    if dialect.requires_message_id and not message.message_id:
        raise msgspec.ValidationError("a message needs a messageId")
    return Message(
        message_id=message.message_id,
        context_id=message.context_id,
        task_id=message.task_id,
        role="ROLE_USER" if message.role == dialect.user_role else "ROLE_AGENT",
        parts=[part_from_03(p, dialect) for p in message.parts],
        metadata=dialect.metadata_in(message.metadata, "message"),
        extensions=message.extensions,
        # A 0.3 REST message has no such field: none then.
        reference_task_ids=getattr(message, "reference_task_ids", []),
    )


def status_to_03(status: TaskStatus, dialect: Dialect03 = JSONRPC_03) -> LegacyStatus:
    message = message_to_03(status.message, dialect) if status.message is not None else None
    state = dialect.states[status.state]
    return build(dialect.structs.status, state=state, message=message, timestamp=status.timestamp)


def status_from_03(status: LegacyStatus | None, dialect: Dialect03 = JSONRPC_03) -> TaskStatus:
    """A 0.3 status as 1.0; none at all (every REST field may be left out) is the unspecified state."""
    if status is None:
        return TaskStatus(state="TASK_STATE_UNSPECIFIED")
    message = message_from_03(status.message, dialect) if status.message is not None else None
    return TaskStatus(state=dialect.states_in[status.state], message=message, timestamp=status.timestamp)


def artifact_to_03(artifact: Artifact, dialect: Dialect03 = JSONRPC_03) -> LegacyArtifact:
    return build(
        dialect.structs.artifact,
        artifact_id=artifact.artifact_id,
        name=artifact.name,
        description=artifact.description,
        parts=[part_to_03(p, dialect) for p in artifact.parts],
        metadata=dialect.metadata_out(artifact.metadata, "artifact"),
        extensions=artifact.extensions,
    )


def artifact_from_03(artifact: LegacyArtifact, dialect: Dialect03 = JSONRPC_03) -> Artifact:
    return Artifact(
        artifact_id=artifact.artifact_id,
        name=artifact.name,
        description=artifact.description,
        parts=[part_from_03(p, dialect) for p in artifact.parts],
        metadata=dialect.metadata_in(artifact.metadata, "artifact"),
        extensions=artifact.extensions,
    )


def task_to_03(task: Task, dialect: Dialect03 = JSONRPC_03) -> LegacyTask:
    return build(
        dialect.structs.task,
        id=task.id,
        context_id=task.context_id,
        status=status_to_03(task.status, dialect),
        history=[message_to_03(m, dialect) for m in task.history],
        artifacts=[artifact_to_03(a, dialect) for a in task.artifacts],
        metadata=dialect.metadata_out(task.metadata, "task"),
    )


def task_from_03(task: LegacyTask, dialect: Dialect03 = JSONRPC_03) -> Task:
    return Task(
        id=task.id,
        context_id=task.context_id,
        status=status_from_03(task.status, dialect),
        artifacts=[artifact_from_03(a, dialect) for a in task.artifacts],
        history=[message_from_03(m, dialect) for m in task.history],
        metadata=dialect.metadata_in(task.metadata, "task"),
    )


# Stream events and send results ---------------------------------------------------------


def stream_result_to_03(response: StreamResponse, dialect: Dialect03 = JSONRPC_03) -> LegacyEvent:
    """The 0.3 form of one stream event: JSON-RPC's ``result`` (REST wraps it by kind)."""
    event = response.event
    match event:
        case Task():
            return task_to_03(event, dialect)
        case Message():
            return message_to_03(event, dialect)
        case TaskStatusUpdateEvent():
            return _status_update_to_03(event, dialect)
        case TaskArtifactUpdateEvent():
            return _artifact_update_to_03(event, dialect)
    raise TypeError(f"not a stream event: {type(event).__name__}")


def _status_update_to_03(event: TaskStatusUpdateEvent, dialect: Dialect03) -> LegacyStatusUpdate:
    return build(
        dialect.structs.status_update,
        task_id=event.task_id,
        context_id=event.context_id,
        status=status_to_03(event.status, dialect),
        final=event.status.state in TERMINAL_STATES,
        metadata=dialect.metadata_out(event.metadata, "status-update"),
    )


def _artifact_update_to_03(event: TaskArtifactUpdateEvent, dialect: Dialect03) -> LegacyArtifactUpdate:
    return build(
        dialect.structs.artifact_update,
        task_id=event.task_id,
        context_id=event.context_id,
        artifact=artifact_to_03(event.artifact, dialect),
        append=event.append,
        last_chunk=event.last_chunk,
        metadata=dialect.metadata_out(event.metadata, "artifact-update"),
    )


def stream_result_from_03(result: LegacyEvent, dialect: Dialect03 = JSONRPC_03) -> StreamResponse:
    match result:
        case Task03() | TaskPb03():
            return stream_response(task_from_03(result, dialect))
        case Message03() | MessagePb03():
            return stream_response(message_from_03(result, dialect))
        case TaskStatusUpdateEvent03() | StatusUpdatePb03():
            return stream_response(_status_update_from_03(result, dialect))
        case TaskArtifactUpdateEvent03() | ArtifactUpdatePb03():
            return stream_response(_artifact_update_from_03(result, dialect))
    raise TypeError(f"not a 0.3 stream result: {type(result).__name__}")


def _status_update_from_03(event: LegacyStatusUpdate, dialect: Dialect03) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=event.task_id,
        context_id=event.context_id,
        status=status_from_03(event.status, dialect),
        metadata=dialect.metadata_in(event.metadata, "status-update"),
    )


def _artifact_update_from_03(event: LegacyArtifactUpdate, dialect: Dialect03) -> TaskArtifactUpdateEvent:
    # Every REST field may be left out; an artifact update without its artifact is no event.
    if event.artifact is None:
        raise msgspec.ValidationError("a 0.3 stream response needs one event")
    return TaskArtifactUpdateEvent(
        task_id=event.task_id,
        context_id=event.context_id,
        artifact=artifact_from_03(event.artifact, dialect),
        append=bool(event.append),
        last_chunk=bool(event.last_chunk),
        metadata=dialect.metadata_in(event.metadata, "artifact-update"),
    )


def send_result_to_03(
    response: SendMessageResponse, dialect: Dialect03 = JSONRPC_03
) -> LegacyTask | LegacyMessage:
    """The 0.3 send result: JSON-RPC's bare task or message (REST wraps it by kind)."""
    result = response.result
    return task_to_03(result, dialect) if isinstance(result, Task) else message_to_03(result, dialect)


def send_result_from_03(
    result: LegacyTask | LegacyMessage, dialect: Dialect03 = JSONRPC_03
) -> SendMessageResponse:
    if isinstance(result, Task03 | TaskPb03):
        return SendMessageResponse(task=task_from_03(result, dialect))
    return SendMessageResponse(message=message_from_03(result, dialect))
