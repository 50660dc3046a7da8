"""The input of an agent that works on text: a ``text`` parameter, or a delegated task.

Every agent that wraps a program or a framework object (the framework adapters, stdio
agents) takes this input on its default action, so that a plain call and a delegation
(seed 002) reach it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from bus.errors import InvalidParams

from .context import Context

__all__ = ["TEXT_INPUT", "input_text"]

TEXT_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "minLength": 1, "description": "What to work on."}},
}
"""The parameters of a text agent's default action. ``text`` is not required by the
schema, since a delegation (seed 002) brings its task instead; :func:`input_text`
refuses a call that has neither."""


def input_text(ctx: Context, params: Mapping[str, Any], key: str = "input") -> str:
    """The text to work on.

    A delegated task (seed 002) gives, in this order: the task, its objective, the outcome
    expected (seed 003), its input, the facts handed on about the user, the filtered context
    it carries (the summary, the messages, the workspace) and the agent that asked (last: a
    program reading the first line reads the task); a plain call gives ``params[key]``,
    which must be a non-empty string.
    """
    d = ctx.request.delegation
    if d is not None and d.task:
        parts = [d.task]
        if d.objective and d.objective != d.task:
            parts.append(f"Objective: {d.objective}")
        if d.expected_outcome:
            parts.append(f"Expected outcome: {d.expected_outcome}")
        if d.input is not None:
            parts.append(f"Input: {d.input if isinstance(d.input, str) else _json(d.input)}")
        facts = d.handoff.facts if d.handoff is not None else None
        if facts:
            parts.append("Known about the user:\n" + "\n".join(f"- {f}" for f in facts))
        if d.context is not None:
            if d.context.summary:
                parts.append(f"Earlier: {d.context.summary}")
            parts.extend(f"{m.role}: {m.content}" for m in d.context.messages)
            if d.context.workspace:
                parts.append(f"Workspace:\n{d.context.workspace}")
        parts.append(f"Asked by: {ctx.request.source_agent_id}")
        return "\n\n".join(parts)
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{key!r} must be a non-empty string")
    return value


def _json(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError):
        return str(value)
