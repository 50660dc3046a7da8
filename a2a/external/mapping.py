"""How a bus call becomes an A2A message, and how A2A content becomes the call's result.

**Call to message.** An action ``a`` called with parameters ``p``:

1. ``p`` is exactly ``{"text": <string>}``: one **text part** holding the string;
2. otherwise, when the skill accepts JSON (its ``inputModes``, else the card's
   ``defaultInputModes``, list ``application/json``, a ``+json`` type, ``*/*``, or
   nothing at all): one **data part** ``{"action": a, "params": p}``;
3. otherwise the call is refused with INVALID_PARAMS (the skill takes text only).

A skill's action also puts ``{"skillId": a}`` in the message metadata (what this
project's own gateway reads to pick an action). The default action ``send`` takes text
only and names no skill.

**Content to result.** Of a completed task, its artifacts' parts; of a message answer,
its parts:

- every part is text: the text, an artifact's parts concatenated (streamed chunks) and
  artifacts separated by a newline;
- a single data part: its value;
- anything else: the list of parts as A2A 1.0 JSON (``{"text"}``, ``{"data"}``,
  ``{"url", "mediaType"}``, ``{"raw": <base64>}``...); no part at all is ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import UNSET

from bus.errors import InvalidParams
from bus.ids import new_id
from transports.a2a_http import AgentCard, AgentSkill, Artifact, Message, Part, to_builtins

__all__ = [
    "DEFAULT_ACTION",
    "SKILL_METADATA_KEY",
    "accepts_data",
    "artifacts_value",
    "parts_value",
    "request_message",
    "skill_accepts_data",
]

DEFAULT_ACTION = "send"
"""The action every attached agent has: forward ``{"text": ...}`` as a plain text message."""
SKILL_METADATA_KEY = "skillId"


def accepts_data(modes: Sequence[str]) -> bool:
    """Whether input modes (media types) admit a JSON data part; no modes listed admits anything."""
    if not modes:
        return True
    for mode in modes:
        kind = mode.split(";", 1)[0].strip().lower()
        if kind in ("application/json", "*/*", "application/*") or kind.endswith("+json"):
            return True
    return False


def skill_accepts_data(card: AgentCard, skill: AgentSkill | None) -> bool:
    """Whether a skill (or, for None or a skill listing no modes, the card) takes data parts."""
    modes = skill.input_modes if skill is not None and skill.input_modes else card.default_input_modes
    return accepts_data(modes)


def _is_text(params: Mapping[str, Any]) -> bool:
    return len(params) == 1 and isinstance(params.get("text"), str)


def request_message(
    action: str,
    params: Mapping[str, Any],
    *,
    skill: bool,
    data: bool,
    context_id: str = "",
    task_id: str = "",
) -> Message:
    """The message for a call of ``action`` (module docstring).

    ``skill``: the action is one of the remote's skills; ``data``: it accepts data parts;
    ``context_id`` and ``task_id``: the remote context and task it continues (none when empty).

    Raises:
        InvalidParams: the parameters are not ``{"text": ...}`` and the action takes text only.
    """
    if _is_text(params):
        part = Part(text=params["text"])
    elif data:
        part = Part(data={"action": action, "params": dict(params)})
    else:
        raise InvalidParams(
            f"{action!r} takes text only: call it with {{'text': '...'}}",
            details={"action": action},
        )
    metadata = {SKILL_METADATA_KEY: action} if skill else None
    return Message(
        message_id=new_id(),
        role="ROLE_USER",
        parts=[part],
        metadata=metadata,
        context_id=context_id,
        task_id=task_id,
    )


def _all_text(parts: Sequence[Part]) -> bool:
    return all(p.text is not None for p in parts)


def parts_value(parts: Sequence[Part]) -> Any:
    """The result a list of parts stands for: text, one data value, or the parts themselves."""
    if not parts:
        return None
    if _all_text(parts):
        return "".join(p.text or "" for p in parts)
    if len(parts) == 1 and parts[0].data is not UNSET:
        return parts[0].data
    return [to_builtins(p) for p in parts]


def artifacts_value(artifacts: Sequence[Artifact]) -> Any:
    """The result of a completed task's artifacts (module docstring)."""
    with_parts = [a for a in artifacts if a.parts]
    if with_parts and all(_all_text(a.parts) for a in with_parts):
        return "\n".join(parts_value(a.parts) for a in with_parts)
    return parts_value([p for a in with_parts for p in a.parts])
