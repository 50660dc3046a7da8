"""How an A2A message becomes a bus call, and how the call's outcome becomes a task.

Which action a message reaches, in this order:

1. a **data part** that is an object with an ``action`` key: that action, with the
   object's ``params`` or ``parameters`` (an object; the bus envelope's own word) as its
   parameters, both only if equal; without either, the rest of the object's keys are the
   parameters;
2. a **skill id** in the message's or the request's ``metadata.skillId``: on an agent's
   own endpoint the skill ids are its actions; on the gateway's endpoint they are
   capabilities, and the call goes to the best live agent that has it. Its parameters
   are the first data part (an object), else ``{"text": <the text parts joined>}``;
3. **text only**: the agent's default action (``defaultAction`` in its metadata, else
   its only action) with ``{"text": ...}``.

A result that is a string comes back as a text part, anything else as a data part, in
one artifact named ``result``. Typed errors end the task:

=======================================  ===========================
bus error                                task state
=======================================  ===========================
CANCELLED                                ``TASK_STATE_CANCELED``
PERMISSION_DENIED, INVALID_PARAMS,       ``TASK_STATE_REJECTED`` (the agent refused
UNKNOWN_ACTION, MAX_DEPTH_EXCEEDED,      before doing the work)
CYCLE_DETECTED, BUDGET_EXCEEDED,
FAN_OUT_EXCEEDED, MAX_HOPS_EXCEEDED
anything else                            ``TASK_STATE_FAILED``
=======================================  ===========================

and the status message carries ``CODE: message`` as text and ``{"code", "agent", "hop"}``
in its metadata.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from bus.errors import A2AError
from bus.ids import new_id
from bus.subjects import validate_name
from bus.wire import TokenUsage
from transports.a2a_http import Artifact, Message, Part, TaskState, TaskStatus

from ..core.route import Route, by_capability

__all__ = [
    "BadMessage",
    "CallPlan",
    "UnsupportedContent",
    "answer_of",
    "error_status",
    "names_route",
    "now_rfc3339",
    "plan_call",
    "result_artifact",
    "resume_of",
    "status",
    "timeout_of",
]

_REJECTED = frozenset(
    {
        "PERMISSION_DENIED",
        "INVALID_PARAMS",
        "UNKNOWN_ACTION",
        "MAX_DEPTH_EXCEEDED",
        "CYCLE_DETECTED",
        "BUDGET_EXCEEDED",
        "FAN_OUT_EXCEEDED",
        "MAX_HOPS_EXCEEDED",
    }
)
_ID = re.compile(r"^[A-Za-z0-9_.:/-]{1,128}$")
_TIMEOUT_KEY = "timeoutMs"
_PARAMS_KEYS = ("params", "parameters")
"""Where an action data part holds its arguments: A2A clients' word, and the bus envelope's."""


class BadMessage(ValueError):
    """The message names no action this endpoint can reach (INVALID_PARAMS to the client)."""


class UnsupportedContent(BadMessage):
    """The message carries content no bus call can take (CONTENT_TYPE_NOT_SUPPORTED to the client)."""


@dataclass(frozen=True)
class CallPlan:
    """Where a message goes and what it asks."""

    route: Route | str
    action: str
    params: dict[str, Any]


def _texts(parts: Sequence[Part]) -> str:
    return "\n".join(p.text for p in parts if p.text is not None)


def _data_objects(parts: Sequence[Part]) -> list[dict[str, Any]]:
    return [p.data for p in parts if p.data is not UNSET and isinstance(p.data, dict)]


def _skill(message: Message, request_metadata: Mapping[str, Any] | None) -> str | None:
    for meta in (message.metadata, request_metadata):
        if meta and isinstance(meta.get("skillId"), str):
            return str(meta["skillId"])
    return None


def names_route(message: Message, request_metadata: Mapping[str, Any] | None) -> bool:
    """Whether a message on the gateway's endpoint names a skill, or an agent in its data part."""
    if _skill(message, request_metadata) is not None:
        return True
    explicit = next((d for d in _data_objects(message.parts) if isinstance(d.get("action"), str)), None)
    return explicit is not None and isinstance(explicit.get("agent"), str)


def _params(message: Message, data: list[dict[str, Any]]) -> dict[str, Any]:
    if data:
        return data[0]
    return {"text": _texts(message.parts)}


def _action_params(part: dict[str, Any]) -> dict[str, Any]:
    """The parameters an action data part gives: ``params`` or ``parameters``, else its other keys."""
    given = {key: part[key] for key in _PARAMS_KEYS if part.get(key) is not None}
    if len(given) == 2 and given["params"] != given["parameters"]:
        raise BadMessage(
            "an action data part gives both 'params' and 'parameters', and they differ: send one of them"
        )
    if not given:
        return {k: v for k, v in part.items() if k not in ("action", "agent", *_PARAMS_KEYS)}
    key, params = next(iter(given.items()))
    if not isinstance(params, dict):
        raise BadMessage(f"'{key}' of an action data part must be an object")
    return params


def default_action(actions: Sequence[str], metadata: Mapping[str, Any] | None) -> str | None:
    """The action a text-only message reaches on an agent, if it has one."""
    chosen = (metadata or {}).get("defaultAction")
    if isinstance(chosen, str) and chosen in actions:
        return chosen
    return actions[0] if len(actions) == 1 else None


def plan_call(
    message: Message,
    request_metadata: Mapping[str, Any] | None,
    *,
    agent: str | None,
    actions: Sequence[str] = (),
    agent_metadata: Mapping[str, Any] | None = None,
) -> CallPlan:
    """The bus call a message asks for, on an agent's endpoint (``agent``) or the gateway's (None).

    Raises:
        UnsupportedContent: the message has a file part (raw bytes or a URL).
        BadMessage: no action can be told from the message.
    """
    if not message.parts:
        raise BadMessage("the message has no parts")
    if any(p.raw is not None or p.url is not None for p in message.parts):
        # A bus call's parameters are JSON an action's schema describes: a file has no place there.
        raise UnsupportedContent("file parts are not supported: send text or a data part")
    data = _data_objects(message.parts)
    explicit = next((d for d in data if isinstance(d.get("action"), str)), None)
    skill = _skill(message, request_metadata)
    if explicit is not None:
        action = str(explicit["action"])
        params = _action_params(explicit)
        if agent is not None:
            return CallPlan(agent, action, params)
        target = explicit.get("agent")
        if isinstance(target, str):
            try:
                return CallPlan(validate_name("agent", target), action, params)
            except ValueError as exc:
                raise BadMessage(str(exc)) from None
        if skill is None:
            raise BadMessage("on the gateway's endpoint, name an agent ('agent' in the data part) or a skill")
        return CallPlan(by_capability(skill), action, params)
    if agent is not None:
        action_name = skill or default_action(actions, agent_metadata)
        if action_name is None:
            raise BadMessage(
                f"agent {agent} has several actions ({', '.join(actions) or 'none listed'}): "
                "name one as the skill id or in a data part {'action': ..., 'params': {...}}"
            )
        return CallPlan(agent, action_name, _params(message, data))
    if skill is None:
        raise BadMessage("on the gateway's endpoint, name a skill (a capability) in metadata.skillId")
    if not valid_id(skill):
        raise BadMessage("metadata.skillId: 1-128 letters, digits or _ . : / -")
    return CallPlan(by_capability(skill), "", _params(message, data))


def answer_of(message: Message) -> Any:
    """What a follow-up message answers an agent's question with: its text, else its first
    data part's object."""
    text = _texts(message.parts)
    if text:
        return text
    objects = _data_objects(message.parts)
    if not objects:
        raise BadMessage("a follow-up message answers with text or a data part")
    return objects[0]


def resume_of(error: A2AError) -> dict[str, Any] | None:
    """The parameters that continue an agent's work after its INPUT_REQUIRED (its details'
    ``resume``), or None for another error."""
    if error.code != "INPUT_REQUIRED":
        return None
    resume = (error.details or {}).get("resume")
    return dict(resume) if isinstance(resume, dict) else {}


def valid_id(value: str) -> bool:
    """Ids the gateway accepts from clients (context ids become conversation ids)."""
    return bool(_ID.match(value))


def timeout_of(metadata: Sequence[Mapping[str, Any] | None], default: float, maximum: float) -> float:
    """The call's deadline in seconds: the first ``timeoutMs`` given, else ``default``, at most ``maximum``.

    Raises:
        BadMessage: ``timeoutMs`` is not a positive number.
    """
    for meta in metadata:
        if meta and _TIMEOUT_KEY in meta:
            value = meta[_TIMEOUT_KEY]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise BadMessage("metadata.timeoutMs must be a number of milliseconds")
            if value <= 0:
                raise BadMessage("metadata.timeoutMs must be positive")
            return min(value / 1000.0, maximum)
    return min(default, maximum)


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def status(state: TaskState, text: str | None = None, metadata: dict[str, Any] | None = None) -> TaskStatus:
    """A status stamped now, with an agent message when there is something to say."""
    message = None
    if text is not None:
        message = Message(message_id=new_id(), role="ROLE_AGENT", parts=[Part(text=text)], metadata=metadata)
    return TaskStatus(state=state, message=message, timestamp=now_rfc3339())


def error_status(error: A2AError, text: str) -> TaskStatus:
    """How a typed error ends a task; ``text`` is the (redacted) message to show."""
    info = error.to_info()
    if error.code == "INPUT_REQUIRED":  # the agent asks: its question is the status message
        return status("TASK_STATE_INPUT_REQUIRED", text, {"code": info.code, "agent": info.agent})
    if error.code == "CANCELLED":
        state: TaskState = "TASK_STATE_CANCELED"
    elif error.code in _REJECTED:
        state = "TASK_STATE_REJECTED"
    else:
        state = "TASK_STATE_FAILED"
    meta: dict[str, Any] = {"code": info.code}
    if info.agent is not None:
        meta["agent"] = info.agent
    if info.hop is not None:
        meta["hop"] = info.hop
    return status(state, f"{info.code}: {text}", meta)


def result_artifact(result: Any) -> Artifact:
    if isinstance(result, float) and not math.isfinite(result):
        result = str(result)  # JSON cannot carry it
    part = Part(text=result) if isinstance(result, str) else Part(data=result)
    return Artifact(artifact_id=new_id(), name="result", parts=[part])


_SUBJECT = re.compile(r"\ba2a\.[A-Za-z0-9_-]+\.[A-Za-z0-9_.*>-]+")


def shown(error: A2AError, route: object, redact: Callable[[str], str]) -> str:
    """What a client is told of an error: redacted, and without the bus's subjects."""
    if error.code == "NO_RESPONDERS":
        return f"no instance of {route} is serving"
    return _SUBJECT.sub("<subject>", redact(error.message))


def usage_metadata(usage: TokenUsage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {"usage": {"prompt": usage.prompt, "completion": usage.completion, "total": usage.total}}


def conversation_of(principal: str, context_id: str) -> str:
    """The bus conversation of an A2A context: scoped to its owner, so users never share one."""
    return hashlib.sha256(principal.encode()).hexdigest()[:16] + "-" + context_id
