"""The delegate tool's arguments: seed 000's ``SubAgentArgs``, as a model fills them in.

:func:`delegate_schema` is the JSON Schema the model sees; :func:`parse` checks what the
model sent against it and turns it into the keywords of :meth:`a2a.Context.delegate`
(a bad argument is an INVALID_PARAMS error, which the tool hands the model as text);
:func:`answer_text` is what the model reads back from a delegation that succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from bus.errors import InvalidParams
from bus.handoff import ContextFilter

from ..delegation.views import DEFAULT_CONTEXT_TOKENS, DelegationResponse

__all__ = ["DEFAULT_CONTEXT_TOKENS", "DelegateArgs", "answer_text", "delegate_schema", "parse"]

ROLES = ("user", "assistant", "tool", "system")

_Count = Annotated[int, msgspec.Meta(ge=0)]


class _Filter(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Seed 000's ``ContextFilter`` as the model writes it (snake_case keys)."""

    last_messages: _Count | None = None
    roles: list[str] | None = None
    keywords: list[str] | None = None
    include_summary: bool = False
    include_workspace: bool = False
    workspace_files: list[str] | None = None
    max_age_seconds: _Count | None = None


class DelegateArgs(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Seed 000's ``SubAgentArgs``: what the model may say about one delegation."""

    task: str
    agent_name: str | None = None
    context: _Filter | None = None
    input: Any = None
    max_context_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    allowed_tools: list[str] | None = None
    allow_nested_calls: bool = False


@dataclass(frozen=True, slots=True)
class Parsed:
    """Checked arguments: the agent to delegate to (None: the tool's own) and the
    keywords for :meth:`a2a.Context.delegate` beside the target and the task."""

    agent: str | None
    task: str
    options: dict[str, Any]


def _context_schema() -> dict[str, Any]:
    strings = {"type": "array", "items": {"type": "string"}}
    return {
        "type": "object",
        "description": "Which part of this conversation the agent gets (default: none of it).",
        "properties": {
            "last_messages": {
                "type": "integer",
                "minimum": 0,
                "description": "Only the last N messages of this conversation.",
            },
            "roles": {
                "type": "array",
                "items": {"type": "string", "enum": list(ROLES)},
                "description": "Only messages of these roles.",
            },
            "keywords": {**strings, "description": "Only messages containing one of these words."},
            "include_summary": {"type": "boolean", "description": "Add the conversation's summary."},
            "include_workspace": {
                "type": "boolean",
                "description": "Add the workspace: its directory and files (see workspace_files).",
            },
            "workspace_files": {**strings, "description": "Name these workspace files, not the whole tree."},
            "max_age_seconds": {
                "type": "integer",
                "minimum": 0,
                "description": "Only messages at most this many seconds old.",
            },
        },
        "additionalProperties": False,
    }


def delegate_schema(agents: Sequence[str] | None, bound: bool, max_context_tokens: int) -> dict[str, Any]:
    """The JSON Schema of a delegate tool's arguments.

    ``bound``: the tool delegates to one agent, so there is no ``agent_name``; otherwise
    ``agent_name`` is required, one of ``agents`` when they are given.
    """
    properties: dict[str, Any] = {}
    required = ["task"]
    if not bound:
        agent: dict[str, Any] = {"type": "string", "description": "The bus agent to delegate the task to."}
        if agents is not None:
            agent["enum"] = list(agents)
        properties["agent_name"] = agent
        required.insert(0, "agent_name")
    properties |= {
        "task": {"type": "string", "description": "What the agent should do, in full."},
        "context": _context_schema(),
        "input": {"description": "Structured input data for the task (any JSON value)."},
        "max_context_tokens": {
            "type": "integer",
            "minimum": 1,
            "maximum": max_context_tokens,
            "default": max_context_tokens,
            "description": f"Tokens of context the agent gets at most (default {max_context_tokens}).",
        },
        "allowed_tools": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only these tools for the agent (it never gets tools it lacks).",
        },
        "allow_nested_calls": {
            "type": "boolean",
            "description": "Let the agent delegate further (default false).",
        },
    }
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def parse(
    arguments: Mapping[str, Any], agents: Sequence[str] | None, bound: bool, max_context_tokens: int
) -> Parsed:
    """The model's arguments, checked.

    Raises:
        InvalidParams: an argument is missing, unknown or of the wrong type or range.
    """
    try:
        args = msgspec.convert(dict(arguments), DelegateArgs)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"bad delegate arguments: {exc}") from None
    if not args.task.strip():
        raise InvalidParams("'task' must say what the agent should do")
    if bound and args.agent_name is not None:
        raise InvalidParams("this tool delegates to one agent: leave out 'agent_name'")
    if not bound:
        if not args.agent_name:
            raise InvalidParams("'agent_name' is required: the bus agent to delegate to")
        if agents is not None and args.agent_name not in agents:
            raise InvalidParams(f"'agent_name' must be one of {list(agents)}")
    tokens = args.max_context_tokens or max_context_tokens
    if tokens > max_context_tokens:
        raise InvalidParams(f"'max_context_tokens' is at most {max_context_tokens}")
    flt = args.context
    if flt is not None and flt.roles is not None and not set(flt.roles) <= set(ROLES):
        raise InvalidParams(f"'context.roles' may only hold {list(ROLES)}")
    options: dict[str, Any] = {
        "max_context_tokens": tokens,
        "allow_nested_calls": args.allow_nested_calls,
    }
    if flt is not None:
        options["context"] = ContextFilter(**msgspec.structs.asdict(flt))
    if args.input is not None:
        options["input"] = args.input
    if args.allowed_tools is not None:
        options["allowed_tools"] = args.allowed_tools
    return Parsed(args.agent_name, args.task, options)


def answer_text(response: DelegationResponse) -> str:
    """What the model reads from a delegation that ended well: the callee's result (or its
    summary), marked when the callee says the work is only partly done; never empty."""
    text = response.result or response.summary
    if not text:
        text = f"{response.target_employee} finished the task and returned no text"
    if response.status == "partial":
        return f"partial result from {response.target_employee}: {text}"
    return text
