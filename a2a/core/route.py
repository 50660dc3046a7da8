"""Where a call goes: an agent by name, one instance, or the best capable instance."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from bus.errors import NoCapableAgent
from bus.subjects import Subjects
from discovery import LocalView

from ..delegation.roster import AgentRules

__all__ = ["Route", "Target", "as_route", "by_capability", "by_instance", "resolve", "to_each"]


@dataclass(frozen=True, slots=True)
class Route:
    """Exactly one of ``agent``, ``instance``, ``capabilities`` or ``each`` is set (and
    ``agent`` with ``each``: the one of them a request goes to)."""

    agent: str | None = None
    instance: str | None = None
    capabilities: tuple[str, ...] = ()
    each: tuple[str, ...] = ()
    """Agents that are each sent the same request (seed 004's ``targetAgentId`` list)."""

    def __post_init__(self) -> None:
        named = (self.agent and not self.each, self.instance, self.capabilities, self.each)
        if sum(map(bool, named)) != 1 or (self.each and self.agent not in (None, *self.each)):
            raise ValueError("a route names exactly one of: agent, instance, capabilities, each")

    def members(self) -> list[Route]:
        """One route per agent of ``each``, that names them all."""
        return [Route(agent=name, each=self.each) for name in self.each]

    def __str__(self) -> str:
        if self.agent:
            return self.agent
        if self.each:
            return ",".join(self.each)
        if self.instance:
            return f"instance:{self.instance}"
        return f"capabilities:{','.join(self.capabilities)}"


Target = str | Route
"""A plain string is an agent name."""


def by_capability(*capabilities: str) -> Route:
    """Route to the registry's best available instance offering ``capabilities``."""
    return Route(capabilities=tuple(capabilities))


def by_instance(instance_id: str) -> Route:
    """Route to one particular instance."""
    return Route(instance=instance_id)


def to_each(*agents: str) -> Route:
    """Route the same request to each of ``agents`` at once: the call returns their results in
    this order, an agent's typed error (an :class:`a2a.A2AError`) in place of its result."""
    if not agents or len(set(agents)) != len(agents) or not all(isinstance(a, str) and a for a in agents):
        raise ValueError("to_each takes one or more distinct agent names")
    return Route(each=agents)


def as_route(target: Target) -> Route:
    return target if isinstance(target, Route) else _by_name(target)


@functools.lru_cache(maxsize=1024)
def _by_name(name: str) -> Route:
    return Route(agent=name)


def resolve(
    route: Route, subjects: Subjects, view: LocalView | None, tried: set[str], rules: AgentRules | None
) -> tuple[str, str, str | None]:
    """Subject, agent name and (for registry routing) instance id of a route; by capability,
    the best instance not ``tried`` of an agent the caller's ``rules`` let it invoke.

    Raises:
        NoCapableAgent: no registry, or no live instance offers the capabilities.
    """
    if route.agent is not None:
        return subjects.agent(route.agent), route.agent, None
    if route.each:
        raise ValueError("a route to several agents (to_each) is for call(), which returns each result")
    if route.instance is not None:
        entry = view.get(route.instance) if view is not None else None
        return subjects.instance(route.instance), entry.profile.name if entry else route.instance, None
    if view is None:
        raise NoCapableAgent("routing by capability needs a registry, and this runtime has none")
    allowed = rules.may_invoke if rules is not None and "*" not in rules.can_invoke else None
    chosen = view.best(route.capabilities, exclude=tried, allowed=allowed)
    if chosen is None:
        known = "" if view.ready.is_set() else " (the registry has not been reachable yet)"
        raise NoCapableAgent(
            f"no live instance offers {', '.join(route.capabilities)}{known}",
            details={"capabilities": list(route.capabilities)},
        )
    return subjects.instance(chosen.agent_id), chosen.profile.name, chosen.agent_id
