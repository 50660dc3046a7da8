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
from .delegate_args import DEFAULT_CONTEXT_TOKENS, answer_text, delegate_schema, parse

__all__ = [
    "BusTool",
    "Delegating",
    "agent_tool",
    "call_tool",
    "delegate_tool",
    "tool_name",
    "tools_from_profile",
]

_NAME = re.compile(r"[^a-zA-Z0-9_-]+")

ANY_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}


@dataclass(frozen=True)
class Delegating:
    """How a delegate tool delegates (see :func:`delegate_tool`)."""

    agents: Sequence[str] | None = None
    """The agents the model may name when the tool has no target (None: any)."""
    max_context_tokens: int = DEFAULT_CONTEXT_TOKENS
    """The default and the most the model may ask for."""
    workspace: str | None = None
    """The workspace root a context with ``include_workspace`` describes."""


@dataclass(frozen=True)
class BusTool:
    """A tool that calls ``action`` of ``target`` (an agent name or a capability route).

    With ``delegate`` set, the tool takes seed 000's sub-agent arguments and delegates
    the task (:meth:`a2a.Context.delegate`: only the context it asks for, nested calls
    off unless asked); otherwise its arguments are the action's parameters, checked by
    the callee against ``input_schema``.
    """

    name: str
    description: str
    target: Target | None
    """None: the model names the agent, in ``agent`` (see :func:`agent_tool`) or, for a
    delegate tool, in ``agent_name``."""
    action: str
    input_schema: Mapping[str, Any] = field(default_factory=lambda: dict(ANY_OBJECT))
    delegate: Delegating | None = None
    timeout: float | None = None
    """Seconds for one call; the handler's own deadline always caps it."""

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        """Make the call from the current handler and return the callee's result.

        Raises:
            A2AError: the typed error the call ended with (INVALID_PARAMS for arguments
                the tool itself refuses; AGENT_ERROR for a delegated task that failed).
        """
        ctx = current_context()
        if self.delegate is not None:
            d = self.delegate
            parsed = parse(arguments, d.agents, self.target is not None, d.max_context_tokens)
            target = parsed.agent if parsed.agent is not None else self.target
            assert target is not None  # parse() requires agent_name when the tool has no target
            response = await ctx.delegate(
                target,
                parsed.task,
                action=self.action,
                timeout=self.timeout,
                workspace=d.workspace,
                **parsed.options,
            )
            return answer_text(response)
        if self.target is None:
            return await ctx.call(*self._chosen(arguments), timeout=self.timeout)
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
    target: Target | None = None,
    *,
    agents: Sequence[str] | None = None,
    action: str = "run",
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    max_context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    workspace: str | None = None,
) -> BusTool:
    """A tool that delegates a task to ``target``'s ``action`` (:meth:`a2a.Context.delegate`).

    The model fills in seed 000's ``SubAgentArgs``: ``task``; ``agent_name`` when there is
    no ``target`` (one of ``agents`` when given); ``context`` (a ContextFilter: which part
    of this conversation the agent gets, ``last_messages``, ``roles``, ``keywords``,
    ``include_summary``, ``include_workspace``, ``workspace_files``, ``max_age_seconds``);
    ``input`` (structured data); ``max_context_tokens`` (at most ``max_context_tokens``,
    its default too); ``allowed_tools`` (only narrows the agent's own tools);
    ``allow_nested_calls`` (default false). ``workspace`` is the root a context with
    ``include_workspace`` describes; the model cannot choose it.

    The model reads the agent's result text. Arguments the tool refuses (INVALID_PARAMS)
    and a delegation that failed (AGENT_ERROR from the agent, when it reported
    ``status="failed"``) reach it as ``error: CODE from AGENT: message`` through each
    framework's tool wrapper, like every bus tool's errors.
    """
    where = str(target) if target is not None else None
    if name is None:
        name = tool_name("delegate_to", where.split(":")[-1]) if where is not None else "delegate"
    if description is None:
        description = (
            f"Delegate a task to the bus agent {where}; it returns its result."
            if where is not None
            else "Delegate a task to another bus agent (agent_name); it returns its result."
        )
    return BusTool(
        name=name,
        description=description,
        target=target,
        action=action,
        input_schema=delegate_schema(agents, target is not None, max_context_tokens),
        delegate=Delegating(agents=agents, max_context_tokens=max_context_tokens, workspace=workspace),
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
