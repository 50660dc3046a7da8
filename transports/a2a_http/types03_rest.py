"""0.3 HTTP+JSON objects: the protobuf JSON of the 0.3 proto, as 0.3 REST peers write it.

Every field has a default, as in protobuf; the converters check what 1.0 requires. Fields
that mean what a ``types03`` field means carry its Python name under this dialect's wire name
(a message's ``parts`` are written ``content``, a file's ``uri`` and ``content`` are
``fileWithUri`` and ``fileWithBytes``), so one converter reads both. See ``compat03_rest`` for
the dialect's spellings and quirks.
"""

from __future__ import annotations

from typing import Any, Literal

from msgspec import field

from ._base import A2AStruct, Count, Id, Name

__all__ = [
    "ArtifactPb03",
    "ArtifactUpdatePb03",
    "DataPb03",
    "FilePb03",
    "MessagePb03",
    "PartPb03",
    "SendConfigurationPb03",
    "SendMessageRequestPb03",
    "SendMessageResponsePb03",
    "StatePb03",
    "StatusPb03",
    "StatusUpdatePb03",
    "StreamResponsePb03",
    "TaskPb03",
]

StatePb03 = Literal[
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELLED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
]
Metadata = dict[str, Any]


class FilePb03(A2AStruct):
    """A file by reference or inline, named as in ``FileContent03`` (``content`` is the bytes)."""

    uri: str | None = field(default=None, name="fileWithUri")
    content: bytes | None = field(default=None, name="fileWithBytes")
    mime_type: Name = ""
    name: Name = ""


class DataPb03(A2AStruct):
    data: dict[str, Any] = field(default_factory=dict)


class PartPb03(A2AStruct):
    text: str | None = None
    file: FilePb03 | None = None
    data: DataPb03 | None = None
    metadata: Metadata | None = None


class MessagePb03(A2AStruct):
    message_id: Id = ""
    context_id: Id = ""
    task_id: Id = ""
    role: Literal["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"] = "ROLE_UNSPECIFIED"
    parts: list[PartPb03] = field(default_factory=list, name="content")
    metadata: Metadata | None = None
    extensions: list[Name] = field(default_factory=list)


class StatusPb03(A2AStruct):
    state: StatePb03 = "TASK_STATE_UNSPECIFIED"
    message: MessagePb03 | None = None
    timestamp: Name = ""


class ArtifactPb03(A2AStruct):
    artifact_id: Id = ""
    name: Name = ""
    description: str = ""
    parts: list[PartPb03] = field(default_factory=list)
    metadata: Metadata | None = None
    extensions: list[Name] = field(default_factory=list)


class TaskPb03(A2AStruct):
    id: Id = ""
    context_id: Id = ""
    status: StatusPb03 | None = None
    artifacts: list[ArtifactPb03] = field(default_factory=list)
    history: list[MessagePb03] = field(default_factory=list)
    metadata: Metadata | None = None


class StatusUpdatePb03(A2AStruct):
    task_id: Id = ""
    context_id: Id = ""
    status: StatusPb03 | None = None
    final: bool = False
    metadata: Metadata | None = None


class ArtifactUpdatePb03(A2AStruct):
    task_id: Id = ""
    context_id: Id = ""
    artifact: ArtifactPb03 | None = None
    append: bool = False
    last_chunk: bool = False
    metadata: Metadata | None = None


class SendConfigurationPb03(A2AStruct):
    accepted_output_modes: list[Name] = field(default_factory=list)
    history_length: Count = 0
    blocking: bool = False


class SendMessageRequestPb03(A2AStruct):
    message: MessagePb03
    configuration: SendConfigurationPb03 | None = None
    metadata: Metadata | None = None


class SendMessageResponsePb03(A2AStruct):
    task: TaskPb03 | None = None
    message: MessagePb03 | None = None


class StreamResponsePb03(A2AStruct):
    task: TaskPb03 | None = None
    message: MessagePb03 | None = None
    status_update: StatusUpdatePb03 | None = None
    artifact_update: ArtifactUpdatePb03 | None = None
