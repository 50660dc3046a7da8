"""A2A 0.3 JSON-RPC objects, as 0.3 peers (and the SDK's 0.3 compatibility layer) write them.

0.3 differs from 1.0 in spelling, not in meaning:

- objects carry a ``kind`` discriminator: ``"message"``, ``"task"``, ``"status-update"``,
  ``"artifact-update"``, and for parts ``"text"``, ``"file"``, ``"data"``;
- roles are ``"user"``/``"agent"``, states lower-case with dashes (``"input-required"``);
- a file part nests ``{"file": {"bytes": <base64> | "uri": ..., "mimeType", "name"}}``; a
  data part's ``data`` must be a JSON object;
- a status-update event carries ``final`` (true for completed/canceled/failed/rejected);
- send configuration has ``blocking`` where 1.0 has ``returnImmediately``.

A Struct decoded on its own tolerates a missing ``kind``; inside a union (parts, stream
results) it is required, so ``compat03_decode`` adds it from the object's shape first, as the
SDK client does for peers that leave it out.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from msgspec import field

from ._base import A2AStruct, Count, Id, Name

__all__ = [
    "Artifact03",
    "DataPart03",
    "FileContent03",
    "FilePart03",
    "Message03",
    "MessageSendConfiguration03",
    "MessageSendParams03",
    "Part03",
    "PushNotificationAuthenticationInfo03",
    "PushNotificationConfig03",
    "PushNotificationConfigParams03",
    "Role03",
    "StreamResult03",
    "Task03",
    "TaskArtifactUpdateEvent03",
    "TaskIdParams03",
    "TaskPushNotificationConfig03",
    "TaskQueryParams03",
    "TaskState03",
    "TaskStatus03",
    "TaskStatusUpdateEvent03",
    "TextPart03",
]

TaskState03 = Literal[
    "submitted",
    "working",
    "input-required",
    "completed",
    "canceled",
    "failed",
    "rejected",
    "auth-required",
    "unknown",
]
Role03 = Literal["user", "agent"]
Metadata: TypeAlias = dict[str, Any]


class TextPart03(A2AStruct, tag_field="kind", tag="text"):
    text: str
    metadata: Metadata | None = None


class FileContent03(A2AStruct):
    """A file given inline (``bytes``, base64) or by reference (``uri``); exactly one."""

    content: bytes | None = field(default=None, name="bytes")
    uri: str | None = None
    mime_type: Name = ""
    name: Name = ""

    def __post_init__(self) -> None:
        if (self.content is None) == (self.uri is None):
            raise ValueError("a 0.3 file needs exactly one of `bytes` and `uri`")


class FilePart03(A2AStruct, tag_field="kind", tag="file"):
    file: FileContent03
    metadata: Metadata | None = None


class DataPart03(A2AStruct, tag_field="kind", tag="data"):
    data: dict[str, Any]
    metadata: Metadata | None = None


Part03: TypeAlias = TextPart03 | FilePart03 | DataPart03


class Message03(A2AStruct, tag_field="kind", tag="message"):
    message_id: Id
    role: Role03
    parts: list[Part03]
    context_id: Id = ""
    task_id: Id = ""
    metadata: Metadata | None = None
    extensions: list[Name] = field(default_factory=list)
    reference_task_ids: list[Id] = field(default_factory=list)


class TaskStatus03(A2AStruct):
    state: TaskState03
    message: Message03 | None = None
    timestamp: Name = ""


class Artifact03(A2AStruct):
    artifact_id: Id
    parts: list[Part03]
    name: Name = ""
    description: str = ""
    metadata: Metadata | None = None
    extensions: list[Name] = field(default_factory=list)


class Task03(A2AStruct, tag_field="kind", tag="task"):
    id: Id
    context_id: Id
    status: TaskStatus03
    history: list[Message03] = field(default_factory=list)
    artifacts: list[Artifact03] = field(default_factory=list)
    metadata: Metadata | None = None


class TaskStatusUpdateEvent03(A2AStruct, tag_field="kind", tag="status-update"):
    task_id: Id
    context_id: Id
    status: TaskStatus03
    final: bool
    """Required in 0.3, so it has no default and a false value is still written."""
    metadata: Metadata | None = None


class TaskArtifactUpdateEvent03(A2AStruct, tag_field="kind", tag="artifact-update"):
    task_id: Id
    context_id: Id
    artifact: Artifact03
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: Metadata | None = None


StreamResult03: TypeAlias = Task03 | Message03 | TaskStatusUpdateEvent03 | TaskArtifactUpdateEvent03
"""The ``result`` of one 0.3 ``message/stream`` or ``tasks/resubscribe`` event."""


class PushNotificationAuthenticationInfo03(A2AStruct):
    schemes: list[Name] = field(default_factory=list)
    credentials: str = ""


class PushNotificationConfig03(A2AStruct):
    url: str
    id: Id = ""
    token: str = ""
    authentication: PushNotificationAuthenticationInfo03 | None = None


class TaskPushNotificationConfig03(A2AStruct):
    """Params of ``tasks/pushNotificationConfig/set`` and result of the config methods."""

    task_id: Id
    push_notification_config: PushNotificationConfig03


class MessageSendConfiguration03(A2AStruct):
    accepted_output_modes: list[Name] = field(default_factory=list)
    blocking: bool | None = None
    history_length: Count | None = None
    push_notification_config: PushNotificationConfig03 | None = None


class MessageSendParams03(A2AStruct):
    """Params of ``message/send`` and ``message/stream``."""

    message: Message03
    configuration: MessageSendConfiguration03 | None = None
    metadata: Metadata | None = None


class TaskQueryParams03(A2AStruct):
    """Params of ``tasks/get``; ``historyLength`` 0 or absent means the whole history."""

    id: Id
    history_length: Count | None = None
    metadata: Metadata | None = None


class TaskIdParams03(A2AStruct):
    """Params of ``tasks/cancel`` and ``tasks/resubscribe``."""

    id: Id
    metadata: Metadata | None = None


class PushNotificationConfigParams03(A2AStruct):
    """Params of ``tasks/pushNotificationConfig/get|list|delete``: task ``id`` and config id."""

    id: Id
    push_notification_config_id: Id = ""
    metadata: Metadata | None = None
