"""What a view follows of the registry: every instance, or the capabilities and agents it routes to.

A view that follows everything subscribes to the namespace's channel and loads every
instance. One that follows what it uses subscribes to the channel of each capability it
routes to and each agent it waits for (the registry publishes every event on those too,
``discovery._scripts``), and loads only their instances: its events and its memory
follow what its process calls, not the registry's size. It learns them on first use
(:meth:`Interest.add`); past ``MAX_FOLLOWED`` of them it follows everything instead.

An event that concerns several channels a view follows (an instance offering two of its
capabilities) arrives once per channel, the copies back to back: :class:`Copies` keeps
the first.
"""

from __future__ import annotations

from collections.abc import Iterable

from .profile import AgentProfile
from .registry import Registry

__all__ = ["MAX_FOLLOWED", "Copies", "Interest", "load"]

MAX_FOLLOWED = 256
"""Capabilities and agents one view follows by their own channels; past that, everything."""


class Interest:
    """The channels a view follows, and what it loads after (re)subscribing to them."""

    def __init__(self, registry: Registry, *, everything: bool) -> None:
        self.keys = registry.keys
        self.everything = everything
        self.capabilities: dict[str, None] = {}
        self.agents: dict[str, None] = {}

    def covers(self, capabilities: Iterable[str] = (), agents: Iterable[str] = ()) -> bool:
        """Whether the view follows all of these already (asked on every call routed by the
        view: loops, which cost a third of ``all()`` over generators)."""
        if self.everything:
            return True
        followed = self.capabilities
        for capability in capabilities:
            if capability not in followed:
                return False
        followed = self.agents
        for agent in agents:  # noqa: SIM110 - as above
            if agent not in followed:
                return False
        return True

    def add(self, capabilities: Iterable[str] = (), agents: Iterable[str] = ()) -> Interest | None:
        """Follow these too; returns what is new (to subscribe to and load), or None.

        When the total would pass ``MAX_FOLLOWED`` the view follows everything instead:
        the returned value then says so.
        """
        if self.everything:
            return None
        new = Interest.__new__(Interest)
        new.keys, new.everything = self.keys, False
        new.capabilities = {c: None for c in capabilities if c not in self.capabilities}
        new.agents = {a: None for a in agents if a not in self.agents}
        if not new.capabilities and not new.agents:
            return None
        if len(self.capabilities) + len(self.agents) + len(new.capabilities) + len(new.agents) > MAX_FOLLOWED:
            self.everything = new.everything = True
            return new
        self.capabilities.update(new.capabilities)
        self.agents.update(new.agents)
        return new

    def widen(self) -> Interest | None:
        """Follow everything from now on; returns what to subscribe to and load, or None."""
        if self.everything:
            return None
        self.everything = True
        new = Interest.__new__(Interest)
        new.keys, new.everything, new.capabilities, new.agents = self.keys, True, {}, {}
        return new

    def channels(self) -> list[str]:
        if self.everything:
            return [self.keys.events]
        return [self.keys.capability_events(c) for c in self.capabilities] + [
            self.keys.agent_events(a) for a in self.agents
        ]


async def load(registry: Registry, interest: Interest) -> list[AgentProfile]:
    """The live instances ``interest`` covers, read from the registry (each once).

    Raises:
        bus.errors.Unavailable: Redis could not be reached.
    """
    if interest.everything:
        return await registry.list_agents()
    found: dict[str, AgentProfile] = {}
    for capability in interest.capabilities:
        for profile in await registry.capable(capability):
            found.setdefault(profile.agent_id, profile)
    if interest.agents:  # no index by agent name: one listing, read once when first followed
        for profile in await registry.list_agents():
            if profile.name in interest.agents:
                found.setdefault(profile.agent_id, profile)
    return list(found.values())


class Copies:
    """Recognises the copies of one event that arrive on several followed channels."""

    def __init__(self) -> None:
        self._last: object = None
        self._channels: set[object] = set()

    def seen(self, channel: object, data: object) -> bool:
        """True for a copy of the previous event (same bytes, another channel)."""
        if data == self._last and channel not in self._channels:
            self._channels.add(channel)
            return True
        self._last, self._channels = data, {channel}
        return False
