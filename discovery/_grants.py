"""What the roster lets each agent advertise, as the admin wrote it to Redis (``keys.grants``).

``a2a redis-config --load`` writes one field per roster agent: its name -> JSON
``{"capabilities": [ids], "maxInstances": n}``. Only the admin may write the hash, so what
it says is believed; what instance hashes say is not: an instance whose agent is not
granted every capability it advertises is ignored by routing, and a view keeps at most
``maxInstances`` instances of one agent. Without the hash (an open deployment) anything
goes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import msgspec
from msgspec import Meta

from bus.subjects import instance_agent

from ._validate import DECODE_ERRORS
from .limits import MAX_CAPABILITIES, MAX_INSTANCES
from .profile import AgentProfile

__all__ = ["MAX_GRANTS", "Grant", "Grants", "parse_grants"]

MAX_GRANTS = 65_536
"""Agents one grants hash may name; a larger one is refused whole (nothing is granted)."""


class Grant(msgspec.Struct, frozen=True, rename="camel"):
    capabilities: Annotated[frozenset[str], Meta(max_length=MAX_CAPABILITIES)] = frozenset()
    max_instances: Annotated[int, Meta(ge=1, le=1_000_000)] = MAX_INSTANCES


_decoder = msgspec.json.Decoder(Grant)
_NONE = Grant()


@dataclass(frozen=True, slots=True)
class Grants:
    """Agent name -> its grant. ``open``: the namespace has no grants (anything goes)."""

    open: bool = True
    by_agent: dict[str, Grant] = field(default_factory=dict)
    invalid: tuple[str, ...] = ()
    """Agents whose grant did not decode (they are granted nothing)."""

    def allows(self, profile: AgentProfile) -> bool:
        """Whether the instance's agent (proven by its id's prefix) may advertise all it does."""
        if self.open:
            return True
        grant = self.by_agent.get(instance_agent(profile.agent_id))
        if grant is None:
            return False
        return all(cap.id in grant.capabilities for cap in profile.capabilities)

    def max_instances(self, agent: str) -> int | None:
        """How many instances of ``agent`` a view keeps (None: no limit, an open deployment)."""
        if self.open:
            return None
        return self.by_agent.get(agent, _NONE).max_instances


def parse_grants(raw: dict[str | bytes, str | bytes] | None) -> Grants:
    """The grants hash as read (HGETALL); an empty or missing one is an open deployment."""
    if not raw:
        return Grants()
    if len(raw) > MAX_GRANTS:
        return Grants(open=False, invalid=("*",))
    by_agent: dict[str, Grant] = {}
    invalid: list[str] = []
    for name, value in raw.items():
        agent = name.decode(errors="replace") if isinstance(name, bytes) else name
        try:
            by_agent[agent] = _decoder.decode(value)
        except DECODE_ERRORS:
            invalid.append(agent[:100])
    return Grants(open=False, by_agent=by_agent, invalid=tuple(invalid))
