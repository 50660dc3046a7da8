"""A2A 1.0 protocol objects: parts, messages, tasks, stream events and the send/stream results.

These mirror the protobuf JSON mapping of ``a2a.v1`` that the official SDK (1.x) puts on
the wire for both the JSON-RPC and the HTTP+JSON bindings:

- enums are strings (``"TASK_STATE_COMPLETED"``, ``"ROLE_USER"``);
- a protobuf ``oneof`` is a set of sibling optional keys of which exactly one is present
  (``Part``'s ``text``/``raw``/``url``/``data``, ``StreamResponse``'s ``task``/``message``/
  ``statusUpdate``/``artifactUpdate``); ``__post_init__`` enforces "exactly one", which
  msgspec reports as a ``ValidationError`` while decoding;
- strings and lists default to empty and are then omitted, as protobuf does; ``optional``
  scalars (``historyLength``, ``pageSize``...) are ``None`` when absent, because ``0`` means
  something else there;
- ``raw`` is bytes, carried as standard base64.

Fields the protocol marks REQUIRED have no default, so a body without them fails to decode.
The params and results of the other methods are in ``methods``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from msgspec import UNSET, UnsetType, field

from ._base import A2AStruct, Id, Name

__all__ = [
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "Artifact",
    "Message",
    "Metadata",
    "Part",
    "Role",
    "SendMessageResponse",
    "StreamEvent",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "send_message_response",
    "stream_response",
]

TaskState = Literal[
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
]
Role = Literal["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"]

TERMINAL_STATES: frozenset[str] = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
"""States after which a task never changes again; a stream ends after one of these."""

INTERRUPTED_STATES: frozenset[str] = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})
"""States in which the agent waits for the client; a stream also ends after one of these."""

Metadata: TypeAlias = dict[str, Any]
"""Free-form extension data; any JSON object."""


def _exactly_one(owner: str, present: dict[str, bool]) -> None:
    chosen = [name for name, is_set in present.items() if is_set]
    if len(chosen) != 1:
        raise ValueError(f"{owner} needs exactly one of {', '.join(present)}; got {chosen or 'none'}")


class Part(A2AStruct):
    """One piece of content: text, raw bytes, a URL or any JSON value, plus optional naming."""

    text: str | None = None
    raw: bytes | None = None
    url: str | None = None
    data: Any | UnsetType = UNSET
    metadata: Metadata | None = None
    filename: Name = ""
    media_type: Name = ""

    def __post_init__(self) -> None:
        _exactly_one(
            "Part",
            {
                "text": self.text is not None,
                "raw": self.raw is not None,
                "url": self.url is not None,
                "data": self.data is not UNSET,
            },
        )


class Message(A2AStruct):
    """One turn of a conversation, from the user (client) or the agent."""

    message_id: Id
    role: Role
    parts: list[Part]
    context_id: Id = ""
    task_id: Id = ""
    metadata: Metadata | None = None
    extensions: list[Name] = field(default_factory=list)
    reference_task_ids: list[Id] = field(default_factory=list)


class TaskStatus(A2AStruct):
    """A task's state, the agent message that came with it, and when (RFC 3339)."""

    state: TaskState
    message: Message | None = None
    timestamp: Name = ""


class Artifact(A2AStruct):
    """An output of a task."""

    artifact_id: Id
    parts: list[Part]
    name: Name = ""
    description: str = ""
    metadata: Metadata | None = None
    extensions: list[Name] = field(default_factory=list)


class Task(A2AStruct):
    """A unit of work and everything known about it."""

    id: Id
    status: TaskStatus
    context_id: Id = ""
    artifacts: list[Artifact] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    metadata: Metadata | None = None


class TaskStatusUpdateEvent(A2AStruct):
    """A task changed state (1.0 has no ``final`` flag; the state says it)."""

    task_id: Id
    context_id: Id
    status: TaskStatus
    metadata: Metadata | None = None


class TaskArtifactUpdateEvent(A2AStruct):
    """A task produced (a chunk of) an artifact."""

    task_id: Id
    context_id: Id
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: Metadata | None = None


class SendMessageResponse(A2AStruct):
    """Result of ``SendMessage``: ``{"task": ...}`` or ``{"message": ...}``."""

    task: Task | None = None
    message: Message | None = None

    def __post_init__(self) -> None:
        _exactly_one(
            "SendMessageResponse", {"task": self.task is not None, "message": self.message is not None}
        )

    @property
    def result(self) -> Task | Message:
        """The task or message this response carries."""
        if self.task is not None:
            return self.task
        if self.message is not None:
            return self.message
        raise AssertionError("unreachable: __post_init__ guarantees one field")


StreamEvent: TypeAlias = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
"""What a stream carries, unwrapped."""


class StreamResponse(A2AStruct):
    """One streamed event: exactly one of ``task``, ``message``, ``statusUpdate``, ``artifactUpdate``."""

    task: Task | None = None
    message: Message | None = None
    status_update: TaskStatusUpdateEvent | None = None
    artifact_update: TaskArtifactUpdateEvent | None = None

    def __post_init__(self) -> None:
        _exactly_one(
            "StreamResponse",
            {
                "task": self.task is not None,
                "message": self.message is not None,
                "statusUpdate": self.status_update is not None,
                "artifactUpdate": self.artifact_update is not None,
            },
        )

    @property
    def event(self) -> StreamEvent:
        """The one event this response carries."""
        for value in (self.task, self.message, self.status_update, self.artifact_update):
            if value is not None:
                return value
        raise AssertionError("unreachable: __post_init__ guarantees one field")


def send_message_response(result: Task | Message) -> SendMessageResponse:
    """Wrap a task or message as the ``SendMessage`` result."""
    if isinstance(result, Task):
        return SendMessageResponse(task=result)
    return SendMessageResponse(message=result)


def stream_response(event: StreamEvent) -> StreamResponse:
    """Wrap an event as a ``StreamResponse`` (the payload of one SSE event)."""
    match event:
        case Task():
            return StreamResponse(task=event)
        case Message():
            return StreamResponse(message=event)
        case TaskStatusUpdateEvent():
            return StreamResponse(status_update=event)
        case TaskArtifactUpdateEvent():
            return StreamResponse(artifact_update=event)
    raise TypeError(f"not a stream event: {type(event).__name__}")
