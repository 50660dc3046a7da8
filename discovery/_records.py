"""What the registry's operations take and give besides profiles: key names, heartbeat states, candidates."""

from __future__ import annotations

from dataclasses import dataclass

from bus.subjects import validate_name

from .profile import AgentStatus
from .trust import check_trust

__all__ = ["Candidate", "Expiry", "InstanceState", "RegistryKeys", "trust_arg"]


def trust_arg(trust: float | None) -> str:
    """A trust score as the registry's functions store it ('' for none): a plain decimal."""
    return "" if trust is None else f"{check_trust(trust):.6f}"


class RegistryKeys:
    """Redis key names of one namespace (see ``discovery._scripts`` for the layout)."""

    def __init__(self, namespace: str) -> None:
        validate_name("namespace", namespace)
        self.prefix = f"a2a:{{{namespace}}}:"
        self.instances = self.prefix + "instances"
        self.capsof = self.prefix + "capsof"
        self.events = self.prefix + "events"
        self.expiry = self.prefix + "expiry"
        self.sweeper = self.prefix + "sweeper"
        self.grants = self.prefix + "grants"
        """Hash: agent name -> JSON ``{"capabilities": [ids], "maxInstances": n}``, what the
        roster lets each agent advertise. Written by the admin only; without it (an open
        deployment) any agent may advertise anything."""

    def instance(self, agent_id: str) -> str:
        return f"{self.prefix}inst:{agent_id}"

    def capability_events(self, cap_id: str) -> str:
        """The channel of the change events of instances offering ``cap_id``."""
        return f"{self.prefix}events:cap:{cap_id}"

    def agent_events(self, agent: str) -> str:
        """The channel of the change events of ``agent``'s instances."""
        return f"{self.prefix}events:agent:{agent}"

    def capability(self, cap_id: str) -> str:
        return f"{self.prefix}cap:{cap_id}"

    def agent_instances(self, agent: str) -> str:
        """Sorted set of one agent's live instances (instance id -> expiry, server ms)."""
        return f"{self.prefix}insts:{agent}"


@dataclass(frozen=True, slots=True)
class InstanceState:
    """What a heartbeat reports for one instance.

    ``trust``: the score an external agent's proxy publishes (``discovery.trust``); None
    for agents of the deployment. A value outside [0, 1] raises ValueError here.
    """

    agent_id: str
    status: AgentStatus
    load: int
    capacity: int
    trust: float | None = None

    def __post_init__(self) -> None:
        if self.trust is not None:
            check_trust(self.trust)


@dataclass(frozen=True, slots=True)
class Candidate:
    """The best instance for a set of capabilities, and its match score times its trust."""

    agent_id: str
    score: float


@dataclass(frozen=True, slots=True)
class Expiry:
    """What one call of the sweeper did, and when to call it again.

    ``held``: this caller holds the sweeper's lease. ``wait``: seconds until the next
    instance expires (None: none is registered) or, for another caller, until the
    lease ends.
    """

    held: bool
    removed: int
    wait: float | None
