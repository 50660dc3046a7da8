"""Registry wire types: AgentCapability and AgentProfile (seed 004)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from msgspec import Meta

from bus.wire import Wire

__all__ = [
    "CAPABILITY_ID_PATTERN",
    "CAPABILITY_ID_RULE",
    "STATUSES",
    "AgentCapability",
    "AgentProfile",
    "AgentStatus",
    "CapabilityCategory",
    "CardSignature",
    "Resources",
    "Trust",
    "reads",
    "validate_capability_id",
]

AgentStatus = Literal["available", "busy", "offline"]
STATUSES: frozenset[str] = frozenset(("available", "busy", "offline"))

CAPABILITY_ID_PATTERN = r"^[A-Za-z0-9_.:/-]{1,128}$"
"""Capability ids: 1-128 letters, digits, ``_ - . : /``. No whitespace, no Redis glob
characters (``* ? [ ]`` and backslash) and no braces (hash tags), so an id is always a safe part
of a Redis key name (``...:cap:<id>``) and of an ACL key pattern."""
_CAPABILITY_ID = re.compile(CAPABILITY_ID_PATTERN)
CAPABILITY_ID_RULE = "1-128 letters, digits, '_', '-', '.', ':' or '/' (no spaces)"


def validate_capability_id(cap_id: object) -> str:
    """Return ``cap_id`` if it is a valid capability id, else raise ValueError naming it."""
    if not isinstance(cap_id, str) or not _CAPABILITY_ID.fullmatch(cap_id):  # fullmatch: no trailing newline
        raise ValueError(f"invalid capability id {cap_id!r}: use {CAPABILITY_ID_RULE}")
    return cap_id


def reads(announced: str, version: str) -> bool:
    """Whether an instance announcing ``announced`` (``protocolVersion``) reads ``version``:
    versions are ``major.minor`` and each reads those before it; anything else reads nothing."""
    try:
        return _version(announced) >= _version(version)
    except ValueError:
        return False


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


CapabilityCategory = Literal["code", "analysis", "search", "browser", "shell", "custom"]

CardSignature = Literal["verified", "unsigned", "invalid"]
"""What checking an external agent's card signature gave: it verified, the card carried
none, or it carried one that failed to verify."""

Trust = Annotated[float, Meta(ge=0.0, le=1.0)]
"""A trust score (``discovery.trust``): 1 is an agent of the deployment, lower is less trusted."""


class Resources(Wire, gc=False):
    memory: str | None = None
    gpu: bool | None = None
    network: bool | None = None


class AgentCapability(Wire, gc=False):
    """Something an agent can do, and how well (``proficiency`` in 0..1)."""

    id: Annotated[str, Meta(min_length=1, max_length=128, pattern=CAPABILITY_ID_PATTERN)]
    name: str = ""
    description: str = ""
    category: CapabilityCategory = "custom"
    required_tools: list[str] = []
    proficiency: Annotated[float, Meta(ge=0.0, le=1.0)] = 1.0
    resources: Resources | None = None


class AgentProfile(Wire, gc=False):  # gc=False: no cycles; views hold tens of thousands
    """One running agent instance as the registry knows it.

    ``agentId`` is the instance id (unique per process instance); ``name`` is the
    agent name shared by all instances of that agent.
    """

    agent_id: str
    name: str
    version: str = "0.0.0"
    description: str = ""
    capabilities: list[AgentCapability] = []
    status: AgentStatus = "available"
    last_seen: int = 0
    """Milliseconds since the epoch of the last heartbeat, by the registry writer's clock."""
    load: int = 0
    """Requests running or queued on the instance."""
    capacity: int = 0
    """Requests the instance runs at once; at ``load >= capacity`` it reports busy."""
    metadata: dict[str, Any] | None = None
    trust: Trust | None = None
    """The trust score the instance publishes with each heartbeat (an external agent's proxy);
    None for agents of the deployment, which routing trusts as 1."""
    card_signature: CardSignature | None = None
    """For an external agent: whether its agent card's signature verified (as its proxy reports)."""
    protocol_version: Annotated[str, Meta(max_length=16)] = "1.3"
    """The newest protocol version the instance reads (``bus.wire``). A record without it, as
    runtimes before 1.4 wrote them, means 1.3: such an instance reads only the full form."""

    def proficiencies(self) -> dict[str, float]:
        return {c.id: c.proficiency for c in self.capabilities}
