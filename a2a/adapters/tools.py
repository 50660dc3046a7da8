"""Bus tools, framework-neutral: a call or a delegation to another bus agent, as a tool.

Each framework module turns a :class:`BusTool` into its own tool type
(``langchain_tools``, ``pydantic_ai_tools``, ``autogen_tools``, ``crewai_tools``).
A tool call runs through the handler the framework runs inside (see
:mod:`a2a.adapters.bridge`), so it is that handler's child call with all its limits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bus.errors import InvalidParams
from discovery.profile import AgentProfile

from ..core.route import Target, by_capability
from .bridge import current_context, text_of

__all__ = ["BusTool", "agent_tool", "call_tool", "delegate_tool", "tool_name", "tools_from_profile"]

_NAME = re.compile(r"[^a-zA-Z0-9_-]+")

DELEGATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the agent should do, in full."}},
    "required": ["task"],
    "additionalProperties": False,
}
ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}


@dataclass(frozen=True)
class BusTool:
    """A tool that calls ``action`` of ``target`` (an agent name or a capability route).

    With ``delegate`` set, the tool takes one ``task`` string and delegates it (seed 002:
    a task with only the context it needs, nested calls off); otherwise its arguments
    are the action's parameters, checked by the callee against ``input_schema``.
    """

    name: str
    description: str
    target: Target | None
    """None: the model names the agent in the ``agent`` argument (see :func:`agent_tool`)."""
    action: str
    input_schema: Mapping[str, Any] = field(default_factory=lambda: dict(ANY_OBJECT))
    delegate: bool = False
    timeout: float | None = None
    """Seconds for one call; the handler's own deadline always caps it."""

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        """Make the call from the current handler and return the callee's result."""
        ctx = current_context()
        if self.target is None:
            return await ctx.call(*self._chosen(arguments), timeout=self.timeout)
        if self.delegate:
            task = arguments.get("task")
            response = await ctx.delegate(
                self.target, str(task or ""), action=self.action, timeout=self.timeout
            )
            return response.result
        return await ctx.call(self.target, self.action, dict(arguments), timeout=self.timeout)

    def _chosen(self, arguments: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
        agent, text = arguments.get("agent"), arguments.get("text")
        allowed = self.input_schema.get("properties", {}).get("agent", {}).get("enum")
        if not isinstance(agent, str) or (allowed is not None and agent not in allowed):
            raise InvalidParams(
                f"'agent' must be one of {allowed}" if allowed else "'agent' must be a string"
            )
        if not isinstance(text, str):
            raise InvalidParams("'text' must be a string")
        return agent, self.action, {"text": text}

    async def run_text(self, arguments: Mapping[str, Any]) -> str:
        """:meth:`run`, with the result as the text a model reads."""
        return text_of(await self.run(arguments))


def tool_name(*parts: str) -> str:
    """A tool name every framework accepts (letters, digits, ``_``, ``-``; 64 at most)."""
    return _NAME.sub("_", "_".join(p for p in parts if p)).strip("_")[:64] or "bus_call"


def call_tool(
    target: Target,
    action: str,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> BusTool:
    """A tool that calls ``action`` of ``target`` with the tool's arguments as parameters."""
    where = str(target)
    return BusTool(
        name=name or tool_name(where.split(":")[-1], action),
        description=description or f"Call the {action!r} action of the bus agent {where}.",
        target=target,
        action=action,
        input_schema=dict(input_schema) if input_schema is not None else dict(ANY_OBJECT),
        timeout=timeout,
    )


def delegate_tool(
    target: Target,
    *,
    action: str = "run",
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> BusTool:
    """A tool that delegates a ``task`` (one string) to ``target``'s ``action``."""
    where = str(target)
    return BusTool(
        name=name or tool_name("delegate_to", where.split(":")[-1]),
        description=description or f"Delegate a task to the bus agent {where}; it returns its result.",
        target=target,
        action=action,
        input_schema=dict(DELEGATE_SCHEMA),
        delegate=True,
        timeout=timeout,
    )


def agent_tool(
    agents: Sequence[str] | None = None,
    *,
    action: str = "run",
    name: str = "call_agent",
    description: str | None = None,
    timeout: float | None = None,
) -> BusTool:
    """One tool for several agents: the model picks ``agent`` (one of ``agents`` when
    given) and sends it ``text``; the call goes to that agent's ``action`` with
    ``{"text": text}``, the parameters every adapter's default action takes."""
    agent: dict[str, Any] = {"type": "string", "description": "The bus agent to ask."}
    if agents is not None:
        agent["enum"] = list(agents)
    return BusTool(
        name=name,
        description=description or "Ask another agent on the bus and get its answer.",
        target=None,
        action=action,
        input_schema={
            "type": "object",
            "properties": {"agent": agent, "text": {"type": "string", "description": "What to ask."}},
            "required": ["agent", "text"],
            "additionalProperties": False,
        },
        timeout=timeout,
    )


def tools_from_profile(
    profile: AgentProfile, *, actions: Sequence[str] | None = None, by_capabilities: bool = False
) -> list[BusTool]:
    """One call tool per action a registered agent lists (its ``actionSpecs``), with the
    action's own description and input schema. ``by_capabilities`` routes each call to
    the best instance with the agent's capabilities rather than to the agent by name."""
    listed = (profile.metadata or {}).get("actionSpecs")
    specs: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
    target: Target = profile.name
    if by_capabilities and profile.capabilities:
        target = by_capability(*(c.id for c in profile.capabilities))
    chosen = list(actions) if actions is not None else [a for a in specs if isinstance(a, str)]
    tools = []
    for action in chosen:
        found = specs.get(action)
        spec: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        schema = spec.get("inputSchema") if isinstance(spec.get("inputSchema"), Mapping) else None
        description = spec.get("description") if isinstance(spec.get("description"), str) else None
        tools.append(
            call_tool(
                target,
                action,
                name=tool_name(profile.name, action),
                description=description or None,
                input_schema=schema,
            )
        )
    return tools
