"""Callee-side checks of a received request: the caller's checks are never trusted."""

from __future__ import annotations

from typing import Any

from bus import codec
from bus.errors import CycleDetected, UnknownAction
from bus.limits import check_budget, check_cycle, check_depth, check_fan_out, check_hops, local_deadline
from bus.wire import PROTOCOL_VERSION, NotificationEnvelope, RequestEnvelope

from ..delegation.policy import Policy
from ..stores.history import ANSWERED, HistoryStore, objective_key
from .agent import Action, Agent
from .guard import Guard

__all__ = ["admit", "claim_stored", "params_of"]


def admit(
    agent: Agent,
    policy: Policy,
    guard: Guard,
    env: RequestEnvelope | NotificationEnvelope,
    sender: str,
    now: float,
) -> tuple[Action, dict[str, Any], float]:
    """Version, own limits, sender, lineage, user, hops, depth, cycle, fan-out, deadline,
    roster rights, action, budget and schema.

    ``sender`` is the identity that published the request (its subject's sender token).
    Returns the action to run, its parameters and the local deadline. Each check is
    guarded by the cheap condition under which it can refuse, so a request that passes
    costs a handful of comparisons (this runs for every message).

    Raises:
        A2AError: the first check that refuses the request.
    """
    meta = env.metadata
    if env.protocol_version != PROTOCOL_VERSION:
        codec.ensure_supported_version(env)
    guard.admit(env, sender)
    if meta.hop_count > meta.max_hops:
        check_hops(meta)
    if meta.depth >= meta.max_depth:
        check_depth(meta)
    if meta.call_chain:
        check_cycle(meta, agent.name)
    if meta.fan_out is not None:
        check_fan_out(meta)
    ttl_ms = meta.ttl_ms
    deadline = now + ttl_ms / 1000.0 if ttl_ms else local_deadline(meta, now)  # raises when none is left
    if not policy.open:
        policy.admit(agent.name, env)  # re-check the caller's rights, at every depth
    name = env.payload.action
    action = agent.actions.get(name) if type(env) is RequestEnvelope else None
    if action is None:
        action = agent.resolve(name, notification=type(env) is NotificationEnvelope)
        if action is None:
            raise UnknownAction(
                f"{agent.name} has no action {name!r}",
                details={"action": name, "actions": sorted(agent.actions)},
            )
    if meta.budget is not None:
        check_budget(meta, action.estimated_tokens)
    params = env.payload.parameters
    if params is None:
        params = params_of(env)
    if action.input_schema is not None:
        action.validate(params)
    return action, params, deadline


def params_of(env: RequestEnvelope | NotificationEnvelope) -> dict[str, Any]:
    """The action's parameters: ``payload.parameters``, or a delegation's structured ``input``."""
    if env.payload.parameters is not None:
        return env.payload.parameters
    d = env.delegation
    return d.input if d is not None and isinstance(d.input, dict) else {}


async def claim_stored(
    history: HistoryStore | None, agent: str, env: RequestEnvelope | NotificationEnvelope, ttl_ms: int
) -> str | None:
    """Checks that need the history store: user isolation and objectives in progress.

    Returns the key of the objective this request now holds, to release when done.

    Raises:
        PermissionDenied: the conversation or thread belongs to another user.
        CycleDetected: the same objective is already in progress.
    """
    if history is None or (env.user_id is None and env.delegation is None):
        return None
    if env.user_id is not None:
        await history.claim(env.conversation_id, env.user_id)
        if env.delegation is not None and env.delegation.thread_id:
            await history.claim(env.delegation.thread_id, env.user_id)
    d = env.delegation
    if d is None or not d.objective:
        return None
    request_id = env.metadata.key
    key = objective_key(env.conversation_id, env.source_agent_id, agent, d.objective)
    holder = await history.start_objective(key, request_id, ttl_ms)
    if holder is not None and holder.startswith(ANSWERED):
        raise CycleDetected(
            f"{env.source_agent_id} -> {agent} with the same objective was answered already: "
            "asking again is a loop",
            details={"objective": d.objective, "answered": True},
        )
    if holder is not None and holder != request_id:
        raise CycleDetected(
            f"{env.source_agent_id} -> {agent} with the same objective is already in progress",
            details={"objective": d.objective, "inProgress": holder},
        )
    return key
