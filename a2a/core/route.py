"""Where a call goes: an agent by name, one instance, or the best capable instance."""

from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = ["Route", "Target", "as_route", "by_capability", "by_instance"]


@dataclass(frozen=True, slots=True)
class Route:
    """Exactly one of ``agent``, ``instance`` or ``capabilities`` is set."""

    agent: str | None = None
    instance: str | None = None
    capabilities: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if sum(map(bool, (self.agent, self.instance, self.capabilities))) != 1:
            raise ValueError("a route names exactly one of: agent, instance, capabilities")

    def __str__(self) -> str:
        if self.agent:
            return self.agent
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


def as_route(target: Target) -> Route:
    return target if isinstance(target, Route) else _by_name(target)


@functools.lru_cache(maxsize=1024)
def _by_name(name: str) -> Route:
    return Route(agent=name)
