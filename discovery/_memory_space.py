"""What an in-memory registry holds of one namespace, and how its operations change it.

The counterpart of the registry's Redis functions (``discovery/registry.lua``), on plain
Python state: one :class:`Stored` per instance hash, which expires ``ttl`` seconds after
the last registration or heartbeat (and then reads as gone, as an expired hash does),
the sweeper's lease, and the change events each operation publishes, in the order and on
the conditions the functions publish them (``discovery._events``):

    register     ``reg``
    heartbeat    ``st`` when the status, capacity or trust changed, or the load moved by
                 ``LOAD_STEP`` of the capacity since the load last published; else nothing
    deregister   ``down``
    expire       ``down`` for each instance whose expiry has passed (the lease holder only)

Nothing here awaits: each operation is atomic, as a function call is on the server.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import msgspec

from ._events import Event
from ._records import Expiry, InstanceState, RegistryKeys, trust_arg
from ._scripts import LOAD_STEP
from .profile import AgentStatus

__all__ = ["Namespace", "Stored"]

_event_encoder = msgspec.json.Encoder()


class _Published(Event, omit_defaults=True):
    """An event as the functions encode it: the fields its kind carries, no nulls."""


@dataclass(slots=True)
class Stored:
    """One instance's hash: the profile JSON registered, and the state heartbeats write."""

    name: str
    profile: bytes
    """The profile as registered, its state fields zeroed (they live beside it)."""
    status: AgentStatus
    load: int
    capacity: int
    trust: str
    """As ``trust_arg`` writes it: a plain decimal, or '' for an instance that publishes none."""
    published_load: int
    """The load views last heard of (the hash's ``pload``)."""
    last_seen: int
    """Milliseconds since the epoch of the last registration or heartbeat."""
    expires: float
    """When the hash expires, on the namespace's monotonic clock."""
    caps: tuple[str, ...] = ()
    """The capabilities it registered: its events go to their channels too."""

    def fields(self) -> list[str | bytes | int | None]:
        """The hash as the registry's functions answer it: profile, status, load, capacity,
        lastSeen, trust (None when absent)."""
        return [self.profile, self.status, self.load, self.capacity, self.last_seen, self.trust or None]


class Namespace:
    """The registry's keys of one namespace, in memory; ``publish`` sends an event's bytes to
    whoever follows ``keys.events`` (and the channels of its capabilities and agent)."""

    def __init__(
        self,
        keys: RegistryKeys,
        publish: Callable[[str, bytes], None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.keys = keys
        self.clock = clock
        self._publish = publish
        self._stored: dict[str, Stored] = {}
        """Instance id -> its hash; an expired one stays until the sweeper announces it."""
        self._lease: tuple[str, float] | None = None
        """The sweeper's lease: its holder and when it ends."""

    # -- reading -----------------------------------------------------------------

    def live(self, agent_id: str) -> Stored | None:
        """An instance's hash, or None when it is gone (never registered, removed or expired)."""
        stored = self._stored.get(agent_id)
        return stored if stored is not None and stored.expires > self.clock() else None

    def rows(self) -> Iterator[tuple[str, Stored]]:
        """Every live instance, in registration order."""
        now = self.clock()
        return ((i, s) for i, s in list(self._stored.items()) if s.expires > now)

    # -- writing ---------------------------------------------------------------------

    def register(
        self,
        agent_id: str,
        name: str,
        profile: bytes,
        state: InstanceState,
        ttl: float,
        caps: tuple[str, ...] = (),
    ) -> None:
        """Add or replace an instance's hash, expiring ``ttl`` seconds from now."""
        load = state.load
        self._stored[agent_id] = stored = Stored(
            name=name,
            profile=profile,
            status=state.status,
            load=load,
            capacity=state.capacity,
            trust=trust_arg(state.trust),
            published_load=load,
            last_seen=_now_ms(),
            expires=self.clock() + ttl,
            caps=caps,
        )
        self._event(_Published(e="reg", id=agent_id), stored)

    def heartbeat(self, state: InstanceState, ttl: float) -> bool:
        """Refresh an instance; False when its hash is gone (the caller registers it again)."""
        stored = self.live(state.agent_id)
        if stored is None:
            return False
        trust = trust_arg(state.trust)
        changed = (
            stored.status != state.status
            or stored.capacity != state.capacity
            or stored.trust != trust
            or (state.capacity > 0 and abs(state.load - stored.published_load) >= LOAD_STEP * state.capacity)
        )
        stored.status, stored.load, stored.capacity = state.status, state.load, state.capacity
        stored.trust = trust
        stored.last_seen = _now_ms()
        stored.expires = self.clock() + ttl
        if changed:
            stored.published_load = state.load
            self._event(
                _Published(
                    e="st",
                    id=state.agent_id,
                    status=state.status,
                    load=state.load,
                    capacity=state.capacity,
                    ts=float(stored.last_seen),
                    trust=state.trust,
                ),
                stored,
            )
        return True

    def deregister(self, agent_id: str) -> None:
        """Remove an instance at once; announced whether or not it was there (as the function does)."""
        stored = self._stored.pop(agent_id, None)
        self._event(_Published(e="down", id=agent_id), stored)

    def expire(self, owner: str, lease: float) -> Expiry:
        """The sweeper: announce the instances whose expiry has passed, if ``owner`` holds the lease.

        Another's lease holds while it lasts, unless it was taken for longer than any sweeper
        takes one or an expiry is overdue by more than a lease (its holder is not sweeping).
        """
        now = self.clock()
        if self._lease is not None and self._lease[0] != owner and self._lease[1] > now:
            left = self._lease[1] - now
            first = self._next_expiry()
            overdue = first is not None and first < now - lease
            if left <= 2 * lease and not overdue:
                return Expiry(held=False, removed=0, wait=left)
        self._lease = (owner, now + lease)
        removed = self.sweep()
        first = self._next_expiry()
        return Expiry(held=True, removed=removed, wait=None if first is None else max(0.0, first - now))

    def sweep(self) -> int:
        """Remove every expired instance, with a ``down`` event each; returns how many."""
        now = self.clock()
        due = [agent_id for agent_id, stored in self._stored.items() if stored.expires <= now]
        for agent_id in due:
            self._event(_Published(e="down", id=agent_id), self._stored.pop(agent_id))
        return len(due)

    def _next_expiry(self) -> float | None:
        return min((s.expires for s in self._stored.values()), default=None)

    def _event(self, event: _Published, stored: Stored | None) -> None:
        """Publish on the namespace's channel, then its instance's capabilities' and agent's."""
        data = _event_encoder.encode(event)
        self._publish(self.keys.events, data)
        for cap in stored.caps if stored is not None else ():
            self._publish(self.keys.capability_events(cap), data)
        name = stored.name if stored is not None else event.id.rpartition("-")[0] or event.id
        self._publish(self.keys.agent_events(name), data)


def _now_ms() -> int:
    return int(time.time() * 1000)
