"""Seed 003's JSON actions, what a model says to the loop, and the observations it gets back.

A model answers each turn with one JSON object tagged by ``action``::

    {"action": "call_agent", "target": "writer", "task": "...", "thread_mode": "new",
     "context": {"files": ["src/agent/mod.rs:35-80"]}, "expected_outcome": "cargo check passes"}
    {"action": "tool_call", "tool": "read_file", "args": {"path": "src/agent/mod.rs"}}
    {"action": "done", "result": "Replaced Agent::run with retry. cargo check passes."}
    {"action": "respond", "text": "read_file failed: no such file; which path did you mean?"}

The seed's own spellings are the fields; ``agent`` and ``text`` are accepted for
``call_agent``'s ``target`` and ``task``, and ``message`` for ``done``'s ``result``. Unknown
fields are ignored, so a model that says a little more still gets through.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

__all__ = [
    "Action",
    "ActionError",
    "CallAgent",
    "Done",
    "ErrorNote",
    "ModelAction",
    "Observation",
    "Respond",
    "ToolCall",
    "decode_action",
    "encode_observation",
]


class Action(msgspec.Struct, kw_only=True, tag_field="action"):
    """Base of the actions: keyword-only fields, ``action`` names the variant."""


class CallAgent(Action, tag="call_agent"):
    """Give a task to a peer agent (a delegation, seed 002)."""

    target: str = ""
    task: str = ""
    agent: str = ""
    """Accepted for ``target``."""
    text: str = ""
    """Accepted for ``task``."""
    thread_mode: Literal["new", "reuse"] = "new"
    thread_id: str | None = None
    """The thread to continue with ``reuse``; default: the last thread with this target."""
    objective: str = ""
    context: dict[str, Any] | None = None
    """File paths, symbols, error messages: the callee's parameters."""
    expected_outcome: str = ""
    """What the target should produce or verify (seed 003); the callee reads it in its
    delegation (``expected_outcome``) beside the task."""

    @property
    def peer(self) -> str:
        return self.target or self.agent

    @property
    def instruction(self) -> str:
        return self.task or self.text


class ToolCall(Action, tag="tool_call"):
    """Use one of the tools this agent was given."""

    tool: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class Done(Action, tag="done"):
    """The task is complete; ``result`` is the answer."""

    result: Any = None
    message: str = ""
    """Accepted for ``result`` (the seed's example says ``message``)."""


class Respond(Action, tag="respond"):
    """Answer the caller without claiming the task is done (a question, or a failure's details)."""

    text: str = ""


ModelAction = CallAgent | ToolCall | Done | Respond


class ActionError(ValueError):
    """A model reply that is not one valid action."""


class ErrorNote(msgspec.Struct, kw_only=True):
    """What went wrong: a stable code and a plain message."""

    code: str
    message: str


class Observation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the loop tells the model after each of its replies."""

    observation: str
    """The action observed (``call_agent``, ``tool_call``, ``done``), or ``invalid``."""
    ok: bool
    name: str = ""
    """The tool or agent concerned."""
    result: Any = None
    thread_id: str | None = None
    error: ErrorNote | None = None
    turns_left: int = 0


_decoder: msgspec.json.Decoder[ModelAction] = msgspec.json.Decoder(ModelAction)
_encoder = msgspec.json.Encoder()
# Models often wrap their JSON in a Markdown code fence.
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*)\n```$", re.S)


def decode_action(reply: str) -> ModelAction:
    """The action a model's reply holds.

    Raises:
        ActionError: the reply is not JSON, or not an object with a known ``action`` and
            valid fields; the message says which, for the model to correct.
    """
    text = reply.strip()
    if (fenced := _FENCE.match(text)) is not None:
        text = fenced.group(1).strip()
    try:
        return _decoder.decode(text)
    except msgspec.ValidationError as exc:
        raise ActionError(f"not a valid action: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ActionError(f"not JSON: {exc}") from None


def encode_observation(observation: Observation) -> str:
    """The observation as the JSON text a model reads."""
    return _encoder.encode(observation).decode()
