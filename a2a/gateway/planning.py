"""Resolving a message's call against the live registry: which agent, which action."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bus.errors import NoCapableAgent
from discovery import LocalView
from transports.a2a_http import A2AProtocolError, SendMessageRequest
from transports.a2a_http import errors as e

from .mapping import BadMessage, CallPlan, UnsupportedContent, default_action, plan_call

__all__ = ["plan_for"]


def _actions(metadata: Mapping[str, Any]) -> list[str]:
    listed = metadata.get("actions")
    return [a for a in listed if isinstance(a, str)] if isinstance(listed, list) else []


def plan_for(view: LocalView | None, request: SendMessageRequest, agent: str | None) -> CallPlan:
    """The call a message asks for, resolved against the live agents of ``view``.

    Raises:
        A2AProtocolError: INVALID_PARAMS when no live agent or action fits;
            CONTENT_TYPE_NOT_SUPPORTED for a file part.
    """
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
