"""Following one remote task to its end, and what its end means for the bus call.

:class:`Progress` folds what arrives (a task snapshot, status and artifact updates, a
message) into the task as it stands, the way the official SDK's client does: an artifact
update with ``append`` adds its parts to the artifact of that id, otherwise it replaces it.
The exchange is over at a terminal or interrupted state, or when a message answers
instead of a task.

:func:`outcome` turns the final task into the call's result or its typed error:

==========================  ===============================================================
final state                 the bus call ends with
==========================  ===============================================================
completed                   the artifacts' value (``mapping``), else the status message's
failed                      AGENT_ERROR, the remote's status message as its message
rejected                    PERMISSION_DENIED (the remote refused to do it)
auth-required               PERMISSION_DENIED (it wants credentials this proxy lacks)
input-required              INPUT_REQUIRED: the status message is the question, ``details``
                            carry it (``interrupts``), ``taskId`` and ``contextId``
canceled                    CANCELLED
anything else               AGENT_ERROR
==========================  ===============================================================

Every error's ``details`` carry the remote ``taskId``, ``contextId`` and ``state``. A
status message carrying this project's own error metadata (``{"code": ...}``, as the
A2A gateway writes it) keeps its code when it is one a remote may report:
INVALID_PARAMS, UNKNOWN_ACTION, PERMISSION_DENIED or AGENT_ERROR.
"""

from __future__ import annotations

from typing import Any

from bus.errors import (
    A2AError,
    AgentError,
    Cancelled,
    InputRequired,
    InvalidParams,
    PayloadTooLarge,
    PermissionDenied,
    UnknownAction,
)
from transports.a2a_http import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    Artifact,
    Message,
    StreamResponse,
    Task,
    TaskStatus,
)

from .errors import remote_text
from .mapping import artifacts_value, parts_value

__all__ = ["Progress", "outcome"]

_FINAL = TERMINAL_STATES | INTERRUPTED_STATES
MAX_PARTS = 10_000
"""Artifact parts one remote task may stream: a hostile agent cannot grow a call without bound."""
_REPORTABLE: dict[str, type[A2AError]] = {
    "INVALID_PARAMS": InvalidParams,
    "UNKNOWN_ACTION": UnknownAction,
    "PERMISSION_DENIED": PermissionDenied,
    "AGENT_ERROR": AgentError,
}
_BY_STATE: dict[str, tuple[type[A2AError], str]] = {
    "TASK_STATE_FAILED": (AgentError, "the remote task failed"),
    "TASK_STATE_REJECTED": (PermissionDenied, "the remote agent rejected the task"),
    "TASK_STATE_AUTH_REQUIRED": (PermissionDenied, "the remote agent requires authentication"),
    "TASK_STATE_INPUT_REQUIRED": (InputRequired, "the remote agent needs more input"),
    "TASK_STATE_CANCELED": (Cancelled, "the remote agent cancelled the task"),
}


class Progress:
    """The remote task as known so far."""

    def __init__(self) -> None:
        self.task_id: str | None = None
        self.context_id = ""
        self.status: TaskStatus | None = None
        self.artifacts: dict[str, Artifact] = {}
        self.answer: Message | None = None
        """A message that answered instead of a task."""
        self.parts = 0
        """Artifact parts streamed so far (bounded by ``MAX_PARTS``)."""
        self.lost: A2AError | None = None
        """Why the remote did not answer the last attempt to follow the task, if it did not."""

    @property
    def finished(self) -> bool:
        """Whether the exchange is over: a final state, or a message answer."""
        return self.answer is not None or (self.status is not None and self.status.state in _FINAL)

    @property
    def result_missing(self) -> bool:
        """Whether the task completed with neither artifacts nor a status message known here
        (a stream that carried only the final status): ``GetTask`` may still have them."""
        status = self.status
        return (
            self.answer is None
            and status is not None
            and status.state == "TASK_STATE_COMPLETED"
            and not any(a.parts for a in self.artifacts.values())
            and (status.message is None or not status.message.parts)
        )

    def task(self) -> Task:
        """The task as it stands (its id must be known)."""
        assert self.task_id is not None and self.status is not None
        return Task(
            id=self.task_id,
            context_id=self.context_id,
            status=self.status,
            artifacts=list(self.artifacts.values()),
        )

    def result(self) -> Task | Message:
        """The final answer: the message, or the task."""
        return self.answer if self.answer is not None else self.task()

    def apply_task(self, task: Task) -> None:
        """A full snapshot (the first stream event, or a GetTask answer)."""
        self.task_id, self.context_id, self.status = task.id, task.context_id, task.status
        if task.artifacts:
            self.artifacts = {a.artifact_id: a for a in task.artifacts}

    def apply_message(self, message: Message) -> None:
        """A message that answers instead of a task."""
        self.answer = message
        self.context_id = self.context_id or message.context_id

    def apply(self, response: StreamResponse) -> bool:
        """Fold one stream event in; True when the exchange is over."""
        if (task := response.task) is not None:
            self.apply_task(task)
        elif response.message is not None and self.task_id is None:
            self.apply_message(response.message)  # one after the task is known is commentary
        elif (update := response.status_update) is not None:
            self._adopt(update.task_id, update.context_id)
            self.status = update.status
        elif (chunk := response.artifact_update) is not None:
            self._adopt(chunk.task_id, chunk.context_id)
            self.parts += len(chunk.artifact.parts)
            if self.parts > MAX_PARTS or len(self.artifacts) >= MAX_PARTS:
                raise PayloadTooLarge(f"the remote agent streamed more than {MAX_PARTS} artifact parts")
            old = self.artifacts.get(chunk.artifact.artifact_id)
            if chunk.append and old is not None:
                old.parts.extend(chunk.artifact.parts)  # in place: appending stays linear
            else:
                self.artifacts[chunk.artifact.artifact_id] = chunk.artifact
        return self.finished

    def _adopt(self, task_id: str, context_id: str) -> None:
        if self.task_id is None:
            self.task_id, self.context_id = task_id, context_id
        if self.status is None:
            self.status = TaskStatus(state="TASK_STATE_SUBMITTED")


def _status_text(status: TaskStatus) -> str | None:
    message = status.message
    if message is None:
        return None
    text = parts_value([p for p in message.parts if p.text is not None])
    return text if isinstance(text, str) and text.strip() else None


def _reported(status: TaskStatus, text: str) -> A2AError | None:
    """The error a status message names in this project's own metadata, if a remote may report it."""
    meta = status.message.metadata if status.message is not None else None
    code = meta.get("code") if isinstance(meta, dict) else None
    cls = _REPORTABLE.get(code) if isinstance(code, str) else None
    if cls is None:
        return None
    return cls(text.removeprefix(f"{code}: "))


def outcome(answer: Task | Message) -> Any:
    """The bus call's result for the remote's final answer, or its typed error (module docstring)."""
    if isinstance(answer, Message):
        return parts_value(answer.parts)
    status = answer.status
    if status.state == "TASK_STATE_COMPLETED":
        if answer.artifacts:
            return artifacts_value(answer.artifacts)
        return parts_value(status.message.parts) if status.message is not None else None
    cls, default = _BY_STATE.get(status.state, (AgentError, f"the remote task ended in state {status.state}"))
    said = _status_text(status)
    text = remote_text(said, default)
    error = _reported(status, text) or cls(text)
    error.details = {
        **error.details,
        "taskId": answer.id,
        "contextId": answer.context_id,
        "state": status.state,
    }
    if isinstance(error, InputRequired):
        error.message = f"the remote agent asks: {text}" if said else text
        error.details["interrupts"] = [{"kind": "input", "text": text if said else ""}]
    raise error
