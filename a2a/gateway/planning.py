"""Resolving a message's call against the live registry: which agent, which action.

On the gateway's own endpoint a message that names no skill and no agent goes to the
*origin agent*: the configured default agent, else the only live agent; with several
live agents and no default it is refused, saying how to name one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bus.errors import NoCapableAgent
from discovery import LocalView
from transports.a2a_http import A2AProtocolError, SendMessageRequest
from transports.a2a_http import errors as e

from .mapping import BadMessage, CallPlan, UnsupportedContent, default_action, names_route, plan_call

__all__ = ["live_agents", "origin_agent", "plan_for"]

_NAMES_SHOWN = 10


def _actions(metadata: Mapping[str, Any]) -> list[str]:
    listed = metadata.get("actions")
    return [a for a in listed if isinstance(a, str)] if isinstance(listed, list) else []


def live_agents(view: LocalView | None) -> list[str]:
    """The names of the live agents, sorted, each once."""
    return sorted({entry.profile.name for entry in view.entries()}) if view is not None else []


def origin_agent(live: Iterable[str], default_agent: str | None) -> str | None:
    """The agent of the gateway's endpoint: ``default_agent``, else the only one of ``live``."""
    if default_agent is not None:
        return default_agent
    names = set(live)
    return names.pop() if len(names) == 1 else None


def _unrouted(live: list[str]) -> str:
    if not live:
        return "no agent is live behind this gateway"
    shown = ", ".join(live[:_NAMES_SHOWN]) + (", ..." if len(live) > _NAMES_SHOWN else "")
    return (
        f"the gateway's endpoint serves {len(live)} agents ({shown}) and the message names none: "
        "name a skill of the gateway's card in metadata.skillId, or send to one agent's endpoint "
        "/agents/<name>; the operator can route such messages to one agent (a2a gateway --default-agent)"
    )


def plan_for(
    view: LocalView | None, request: SendMessageRequest, agent: str | None, default_agent: str | None = None
) -> CallPlan:
    """The call a message asks for, resolved against the live agents of ``view``.

    On the gateway's endpoint (``agent`` None) a message that names no skill and no agent
    is planned as if it were sent to :func:`origin_agent`'s endpoint.

    Raises:
        A2AProtocolError: INVALID_PARAMS when no live agent or action fits;
            CONTENT_TYPE_NOT_SUPPORTED for a file part.
    """
    if agent is None and not names_route(request.message, request.metadata):
        live = live_agents(view)
        agent = origin_agent(live, default_agent)
        if agent is None:
            raise A2AProtocolError(e.INVALID_PARAMS, _unrouted(live))
    actions: list[str] = []
    agent_meta: Mapping[str, Any] | None = None
    if agent is not None and view is not None:
        entry = next((x for x in view.entries() if x.profile.name == agent), None)
        if entry is None:
            raise A2AProtocolError(e.INVALID_PARAMS, f"no live agent named {agent}")
        agent_meta = entry.profile.metadata or {}
        actions = _actions(agent_meta)
    try:
        plan = plan_call(
            request.message, request.metadata, agent=agent, actions=actions, agent_metadata=agent_meta
        )
    except UnsupportedContent as exc:
        raise A2AProtocolError(e.CONTENT_TYPE_NOT_SUPPORTED, str(exc)) from None
    except BadMessage as exc:
        raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
    if plan.action or view is None or isinstance(plan.route, str):
        return plan
    # A skill on the gateway's endpoint with no action: the best agent's default action.
    skill = ",".join(plan.route.capabilities)
    try:
        entry = view.best(list(plan.route.capabilities))
    except NoCapableAgent as exc:
        raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
    if entry is None:
        raise A2AProtocolError(e.INVALID_PARAMS, f"no live agent has the skill {skill}")
    best = entry.profile
    meta = best.metadata or {}
    action = default_action(_actions(meta), meta)
    if action is None:
        raise A2AProtocolError(
            e.INVALID_PARAMS,
            f"{best.name} has several actions: name one in a data part {{'action': ..., 'params': {{...}}}}",
        )
    return CallPlan(best.name, action, plan.params)
