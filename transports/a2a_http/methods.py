"""Params and results of the A2A 1.0 methods other than the send/stream results.

Each is the protobuf JSON of the request message the official SDK puts in JSON-RPC
``params`` (or in an HTTP+JSON body or query string). ``tenant`` is only set by clients
addressing a tenant-scoped interface; the REST binding carries it as a path prefix instead.
"""

from __future__ import annotations

from msgspec import field

from ._base import A2AStruct, Count, Id, Name
from .types import Message, Metadata, Task, TaskState

__all__ = [
    "AuthenticationInfo",
    "CancelTaskRequest",
    "DeleteTaskPushNotificationConfigRequest",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksRequest",
    "ListTasksResponse",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SubscribeToTaskRequest",
    "TaskPushNotificationConfig",
]


class AuthenticationInfo(A2AStruct):
    """How the agent authenticates to a push-notification endpoint."""

    scheme: Name
    credentials: str = ""


class TaskPushNotificationConfig(A2AStruct):
    """Where the agent posts task updates for a task."""

    url: str
    tenant: Id = ""
    id: Id = ""
    task_id: Id = ""
    token: str = ""
    authentication: AuthenticationInfo | None = None


class SendMessageConfiguration(A2AStruct):
    """How the client wants a send handled: output modes, history, blocking or not."""

    accepted_output_modes: list[Name] = field(default_factory=list)
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: Count | None = None
    return_immediately: bool = False


class SendMessageRequest(A2AStruct):
    """Params of ``SendMessage``/``SendStreamingMessage``; body of ``POST /message:send|stream``."""

    message: Message
    tenant: Id = ""
    configuration: SendMessageConfiguration | None = None
    metadata: Metadata | None = None


class GetTaskRequest(A2AStruct):
    """``GetTask``; ``historyLength`` unset means the whole history, 0 means none."""

    id: Id
    tenant: Id = ""
    history_length: Count | None = None


class ListTasksRequest(A2AStruct):
    """``ListTasks`` filters and paging; every field is optional."""

    tenant: Id = ""
    context_id: Id = ""
    status: TaskState | None = None
    page_size: Count | None = None
    page_token: str = ""
    history_length: Count | None = None
    status_timestamp_after: Name = ""
    include_artifacts: bool | None = None


class ListTasksResponse(A2AStruct, omit_defaults=False):
    """A page of tasks. All four fields are required on the wire, so none is omitted."""

    tasks: list[Task]
    next_page_token: str = ""
    page_size: Count = 0
    total_size: Count = 0


class CancelTaskRequest(A2AStruct):
    """``CancelTask``; the REST binding also sends this as the body of ``:cancel``."""

    id: Id
    tenant: Id = ""
    metadata: Metadata | None = None


class SubscribeToTaskRequest(A2AStruct):
    """``SubscribeToTask``: resume the event stream of a running task."""

    id: Id
    tenant: Id = ""


class GetTaskPushNotificationConfigRequest(A2AStruct):
    task_id: Id
    id: Id
    tenant: Id = ""


class DeleteTaskPushNotificationConfigRequest(A2AStruct):
    task_id: Id
    id: Id
    tenant: Id = ""


class ListTaskPushNotificationConfigsRequest(A2AStruct):
    task_id: Id
    tenant: Id = ""
    page_size: Count = 0
    page_token: str = ""


class ListTaskPushNotificationConfigsResponse(A2AStruct):
    configs: list[TaskPushNotificationConfig] = field(default_factory=list)
    next_page_token: str = ""


class GetExtendedAgentCardRequest(A2AStruct):
    tenant: Id = ""
