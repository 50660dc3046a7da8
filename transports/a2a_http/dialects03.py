"""The two 0.3 dialects as data: which Structs each writes, and how it spells roles and states.

A2A 0.3 has two JSON shapes for the same objects: the JSON-RPC binding's (``types03``: parts
tagged by ``kind``, roles ``user``/``agent``, states ``input-required``...) and the HTTP+JSON
binding's protobuf JSON (``types03_rest``: 1.0's enum names but ``TASK_STATE_CANCELLED``,
inline bytes as base64 text, every field optional). A ``Dialect03`` lists what differs; the
converters in ``compat03`` and ``compat03_params`` read it and are the same for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, TypeAlias, TypeVar, get_args

import msgspec

from . import types03 as rpc03
from . import types03_rest as rest03
from .types import Metadata, TaskState

__all__ = [
    "JSONRPC_03",
    "REST_03",
    "Dialect03",
    "Kind03",
    "LegacyArtifact",
    "LegacyArtifactUpdate",
    "LegacyEvent",
    "LegacyMessage",
    "LegacyPart",
    "LegacyStatus",
    "LegacyStatusUpdate",
    "LegacyTask",
    "Structs03",
    "build",
]

LegacyPart: TypeAlias = rpc03.Part03 | rest03.PartPb03
LegacyMessage: TypeAlias = rpc03.Message03 | rest03.MessagePb03
LegacyStatus: TypeAlias = rpc03.TaskStatus03 | rest03.StatusPb03
LegacyArtifact: TypeAlias = rpc03.Artifact03 | rest03.ArtifactPb03
LegacyTask: TypeAlias = rpc03.Task03 | rest03.TaskPb03
LegacyStatusUpdate: TypeAlias = rpc03.TaskStatusUpdateEvent03 | rest03.StatusUpdatePb03
LegacyArtifactUpdate: TypeAlias = rpc03.TaskArtifactUpdateEvent03 | rest03.ArtifactUpdatePb03
LegacyEvent: TypeAlias = LegacyTask | LegacyMessage | LegacyStatusUpdate | LegacyArtifactUpdate
"""A 0.3 object of either dialect (the ``Legacy*`` aliases): what the converters take and return."""

Kind03 = Literal["message", "task", "artifact", "status-update", "artifact-update"]
"""The 0.3 objects that carry ``metadata`` of their own (names as JSON-RPC's ``kind``)."""

S = TypeVar("S", bound=msgspec.Struct)


@dataclass(frozen=True)
class Structs03:
    """The Struct a dialect writes each object as.

    ``data_box`` is the Struct a data part's object is nested in (0.3 REST writes
    ``{"data": {"data": {...}}}``), or None where the object is the part's ``data`` itself.
    """

    text_part: type[rpc03.TextPart03] | type[rest03.PartPb03]
    file_part: type[rpc03.FilePart03] | type[rest03.PartPb03]
    data_part: type[rpc03.DataPart03] | type[rest03.PartPb03]
    data_box: type[rest03.DataPb03] | None
    file: type[rpc03.FileContent03] | type[rest03.FilePb03]
    message: type[rpc03.Message03] | type[rest03.MessagePb03]
    status: type[rpc03.TaskStatus03] | type[rest03.StatusPb03]
    artifact: type[rpc03.Artifact03] | type[rest03.ArtifactPb03]
    task: type[rpc03.Task03] | type[rest03.TaskPb03]
    status_update: type[rpc03.TaskStatusUpdateEvent03] | type[rest03.StatusUpdatePb03]
    artifact_update: type[rpc03.TaskArtifactUpdateEvent03] | type[rest03.ArtifactUpdatePb03]
    send_request: type[rpc03.MessageSendParams03] | type[rest03.SendMessageRequestPb03]
    send_configuration: type[rpc03.MessageSendConfiguration03] | type[rest03.SendConfigurationPb03]


@dataclass(frozen=True)
class Dialect03:
    """What one 0.3 binding spells its own way.

    ``states`` maps each 1.0 state to the dialect's name for it. ``bytes_as_base64_text``: a
    file's inline bytes hold the base64 text of the content (so the wire has it base64 twice).
    ``requires_message_id``: an empty ``messageId`` is refused (every protobuf field may be
    left out, JSON-RPC makes the key itself required). ``empty_metadata_out`` and
    ``empty_metadata_in`` name the objects whose empty ``metadata`` is dropped when written to
    the dialect or read from it; elsewhere an empty object stays one.
    """

    structs: Structs03
    user_role: str
    agent_role: str
    states: Mapping[TaskState, str]
    bytes_as_base64_text: bool
    requires_message_id: bool
    empty_metadata_out: frozenset[Kind03]
    empty_metadata_in: frozenset[Kind03]

    @cached_property
    def states_in(self) -> Mapping[str, TaskState]:
        """The dialect's state names back to 1.0 states."""
        return {wire: state for state, wire in self.states.items()}

    def metadata_out(self, metadata: Metadata | None, kind: Kind03) -> Metadata | None:
        """The ``metadata`` of a 1.0 object written as a 0.3 ``kind``."""
        return (metadata or None) if kind in self.empty_metadata_out else metadata

    def metadata_in(self, metadata: Metadata | None, kind: Kind03) -> Metadata | None:
        """The ``metadata`` of a 0.3 ``kind`` read as 1.0."""
        return (metadata or None) if kind in self.empty_metadata_in else metadata


def build(cls: type[S], **fields: Any) -> S:
    """``cls`` from ``fields``, passing over those it has no field for and those that are None.

    A None value stands for "absent", which is the Struct's default: None in JSON-RPC, the
    protobuf zero value (``0``, ``""``) in REST. A field one dialect lacks (0.3 REST has no
    ``referenceTaskIds``) is simply not written in it.
    """
    names = cls.__struct_fields__
    return cls(**{name: value for name, value in fields.items() if value is not None and name in names})


JSONRPC_03 = Dialect03(
    structs=Structs03(
        text_part=rpc03.TextPart03,
        file_part=rpc03.FilePart03,
        data_part=rpc03.DataPart03,
        data_box=None,
        file=rpc03.FileContent03,
        message=rpc03.Message03,
        status=rpc03.TaskStatus03,
        artifact=rpc03.Artifact03,
        task=rpc03.Task03,
        status_update=rpc03.TaskStatusUpdateEvent03,
        artifact_update=rpc03.TaskArtifactUpdateEvent03,
        send_request=rpc03.MessageSendParams03,
        send_configuration=rpc03.MessageSendConfiguration03,
    ),
    user_role="user",
    agent_role="agent",
    states={
        "TASK_STATE_UNSPECIFIED": "unknown",
        "TASK_STATE_SUBMITTED": "submitted",
        "TASK_STATE_WORKING": "working",
        "TASK_STATE_COMPLETED": "completed",
        "TASK_STATE_FAILED": "failed",
        "TASK_STATE_CANCELED": "canceled",
        "TASK_STATE_INPUT_REQUIRED": "input-required",
        "TASK_STATE_REJECTED": "rejected",
        "TASK_STATE_AUTH_REQUIRED": "auth-required",
    },
    bytes_as_base64_text=False,
    requires_message_id=False,
    empty_metadata_out=frozenset({"message"}),
    empty_metadata_in=frozenset({"message", "task", "artifact", "status-update", "artifact-update"}),
)
"""The JSON-RPC binding of 0.3 (``message/send``...), as the SDK's compatibility layer writes it."""

REST_03 = Dialect03(
    structs=Structs03(
        text_part=rest03.PartPb03,
        file_part=rest03.PartPb03,
        data_part=rest03.PartPb03,
        data_box=rest03.DataPb03,
        file=rest03.FilePb03,
        message=rest03.MessagePb03,
        status=rest03.StatusPb03,
        artifact=rest03.ArtifactPb03,
        task=rest03.TaskPb03,
        status_update=rest03.StatusUpdatePb03,
        artifact_update=rest03.ArtifactUpdatePb03,
        send_request=rest03.SendMessageRequestPb03,
        send_configuration=rest03.SendConfigurationPb03,
    ),
    user_role="ROLE_USER",
    agent_role="ROLE_AGENT",
    states={**{state: state for state in get_args(TaskState)}, "TASK_STATE_CANCELED": "TASK_STATE_CANCELLED"},
    bytes_as_base64_text=True,
    requires_message_id=True,
    empty_metadata_out=frozenset(),
    empty_metadata_in=frozenset({"message", "task", "artifact"}),
)
"""The HTTP+JSON binding of 0.3 (routes under ``/v1``): protobuf JSON of the 0.3 proto."""
