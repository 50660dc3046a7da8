"""The capability registry in memory: what a Redis server and the registry's functions do, for tests.

A :class:`MemoryRegistryServer` plays the Redis server (``a2a.testing.TestBroker`` keeps
one); each :meth:`MemoryRegistryServer.connect` is a :class:`MemoryRegistry`, a
:class:`~discovery.registry.Registry` whose operations run on that shared state instead
of Redis. Everything above it is the production code: a runtime's
:class:`~discovery.view.LocalView` follows its change events and snapshots, and routing
by capability ranks its entries (``discovery._ranking``, ``discovery.scoring``). So, as
with Redis:

- every client of one server sees the instances the others registered (per namespace);
- an instance expires ``ttl`` seconds (3 heartbeat intervals) after its last registration
  or heartbeat, and the views' sweeper announces it gone; a deregistered one goes at once;
- a heartbeat publishes a state event only when it changes what routing reads (status,
  capacity, trust, or load by a quarter of the capacity), as ``discovery._memory_space``
  describes; a view reads back what events name and applies what it reads;
- profiles are checked against the registry's size bounds when registered, and every
  entry read is validated and decoded afresh (``discovery._validate``).

There are no roster grants (an open deployment: any agent may advertise anything), and
nothing else lives here: history, facts, sessions and the gateway's tasks need Redis (a
memory registry's ``redis`` raises :class:`bus.errors.Unavailable`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import anyio
import msgspec
import redis.asyncio as aioredis
from anyio.lowlevel import checkpoint
from redis.asyncio.client import PubSub

from bus.errors import Unavailable

from ._grants import Grants
from ._memory_space import Namespace
from ._ranking import RankedEntries
from ._records import Candidate, Expiry, InstanceState, RegistryKeys
from .limits import check_limits, check_size
from .profile import AgentProfile
from .registry import Registry
from .scoring import match_score
from .trust import DEFAULT_TRUST_FLOOR, check_floor

__all__ = ["MAX_PENDING", "MemoryPubSub", "MemoryRegistry", "MemoryRegistryServer"]

MAX_PENDING = 100_000
"""Events one subscriber may leave unread; past that it is dropped, as Redis drops a
subscriber over its output buffer limit (its view subscribes again and loads a snapshot)."""

_profile_encoder = msgspec.json.Encoder()


class MemoryRegistryServer:
    """The shared state of in-memory registries: instances per namespace, and event channels."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        """``clock``: seconds on a monotonic clock, for expiries and the sweeper's lease."""
        self.clock = clock
        self._namespaces: dict[str, Namespace] = {}
        self._followers: dict[str, list[MemoryPubSub]] = {}

    def connect(
        self,
        *,
        namespace: str = "default",
        heartbeat_interval: float = 1.0,
        missed_heartbeats: int = 3,
        trust_floor: float = DEFAULT_TRUST_FLOOR,
    ) -> MemoryRegistry:
        """A registry client on this server, with :class:`~discovery.registry.Registry`'s arguments."""
        return MemoryRegistry(
            self,
            namespace=namespace,
            heartbeat_interval=heartbeat_interval,
            missed_heartbeats=missed_heartbeats,
            trust_floor=trust_floor,
        )

    def namespace(self, keys: RegistryKeys) -> Namespace:
        """The state of one namespace (made on first use, as Redis keys are)."""
        space = self._namespaces.get(keys.prefix)
        if space is None:
            space = self._namespaces[keys.prefix] = Namespace(keys, self.publish, clock=self.clock)
        return space

    def publish(self, channel: str, data: bytes) -> None:
        """Send ``data`` to every subscriber of ``channel``, in the order published."""
        for follower in list(self._followers.get(channel, ())):
            follower.deliver(channel, data)

    def follow(self, channel: str, follower: MemoryPubSub) -> None:
        followers = self._followers.setdefault(channel, [])
        if follower not in followers:
            followers.append(follower)

    def unfollow(self, follower: MemoryPubSub) -> None:
        for channel, followers in list(self._followers.items()):
            if follower in followers:
                followers.remove(follower)
            if not followers:
                del self._followers[channel]


class MemoryPubSub:
    """One subscription to the server's channels: the part of redis-py's ``PubSub`` a view uses."""

    def __init__(self, server: MemoryRegistryServer) -> None:
        self.server = server
        self.dropped = False
        """Over ``MAX_PENDING`` unread events: its next read fails, as a dropped connection's does."""
        self.closed = False
        self._pending: deque[tuple[str, bytes]] = deque()
        self._arrived: anyio.Event | None = None
        """Set at the next event, while :meth:`get_message` waits for one."""

    async def subscribe(self, *channels: str) -> None:
        await checkpoint()
        for channel in channels:
            self.server.follow(channel, self)

    def deliver(self, channel: str, data: bytes) -> None:
        if len(self._pending) >= MAX_PENDING:
            self.dropped = True
            self._pending.clear()
            self.server.unfollow(self)
        else:
            self._pending.append((channel, data))
        arrived, self._arrived = self._arrived, None
        if arrived is not None:
            arrived.set()

    async def get_message(
        self, ignore_subscribe_messages: bool = True, timeout: float | None = 0.0
    ) -> dict[str, Any] | None:
        """The next message (``type``, ``channel``, ``data`` as bytes), or None after ``timeout``
        seconds without one (None: wait for one). Subscribe confirmations are never given.

        Raises:
            Unavailable: this subscriber was dropped for falling behind.
        """
        if not self._pending and not self.dropped and timeout != 0:
            self._arrived = arrived = anyio.Event()
            with anyio.move_on_after(timeout):
                await arrived.wait()
        else:
            await checkpoint()
        if self.dropped:
            raise Unavailable(f"the registry dropped a subscriber over {MAX_PENDING:,} unread events")
        if not self._pending:
            return None
        channel, data = self._pending.popleft()
        return {"type": "message", "pattern": None, "channel": channel.encode(), "data": data}

    async def aclose(self) -> None:
        self.closed = True
        self.server.unfollow(self)
        self._pending.clear()


class MemoryRegistry(Registry):
    """A :class:`~discovery.registry.Registry` on a :class:`MemoryRegistryServer` (module docstring).

    It has no Redis client: asking for its ``redis`` raises :class:`bus.errors.Unavailable`.
    """

    def __init__(
        self,
        server: MemoryRegistryServer,
        *,
        namespace: str = "default",
        heartbeat_interval: float = 1.0,
        missed_heartbeats: int = 3,
        trust_floor: float = DEFAULT_TRUST_FLOOR,
    ) -> None:
        super().__init__(
            cast(aioredis.Redis, None),  # kept by no one: see the ``redis`` property
            namespace=namespace,
            heartbeat_interval=heartbeat_interval,
            missed_heartbeats=missed_heartbeats,
            trust_floor=trust_floor,
        )
        self.server = server
        self._space = server.namespace(self.keys)
        self._subscribers: list[MemoryPubSub] = []

    @property
    def redis(self) -> aioredis.Redis:
        """There is none: what needs Redis (history, facts, sessions, the gateway's tasks) is told so."""
        raise Unavailable(
            "the in-memory registry keeps agent instances only: history, facts, sessions and "
            "the gateway's tasks need Redis (configure REDIS_URL)"
        )

    @redis.setter
    def redis(self, client: aioredis.Redis) -> None:
        """Set by the base class's constructor: nothing to keep."""

    async def aclose(self) -> None:
        subscribers, self._subscribers = self._subscribers, []
        for subscriber in subscribers:
            await subscriber.aclose()

    def pubsub(self) -> PubSub:
        """A subscriber to the server's channels (a :class:`MemoryPubSub`, which has the
        ``subscribe``, ``get_message`` and ``aclose`` of redis-py's, the part views use)."""
        self._subscribers = [s for s in self._subscribers if not (s.dropped or s.closed)]
        subscriber = MemoryPubSub(self.server)
        self._subscribers.append(subscriber)
        return cast(PubSub, subscriber)

    async def grants(self) -> Grants:
        """None are kept: an open deployment, where any agent may advertise anything."""
        await checkpoint()
        return self.granted

    # -- writing ---------------------------------------------------------------------

    async def register_many(self, profiles: Sequence[AgentProfile]) -> None:
        """Add or replace instances (EntryTooLarge, a ValueError, for one over the size bounds:
        then none is written)."""
        checked = []
        for profile in profiles:
            check_limits(profile)
            static = msgspec.structs.replace(
                profile, status="available", load=0, capacity=0, last_seen=0, trust=None
            )
            profile_json = _profile_encoder.encode(static)
            check_size(profile.agent_id, len(profile_json.decode()))
            state = InstanceState(
                profile.agent_id, profile.status, profile.load, profile.capacity, profile.trust
            )
            checked.append((profile.name, profile_json, state, tuple(profile.proficiencies())))
        await checkpoint()
        for name, profile_json, state, caps in checked:
            self._space.register(state.agent_id, name, profile_json, state, self.ttl, caps)

    async def heartbeat(self, states: Sequence[InstanceState]) -> list[str]:
        """Refresh instances; returns the ids the registry no longer knows (expired): re-register those."""
        if not states:
            return []
        await checkpoint()
        return [state.agent_id for state in states if not self._space.heartbeat(state, self.ttl)]

    async def deregister(self, agent_id: str) -> None:
        await checkpoint()
        self._space.deregister(agent_id)

    async def expire_due(self, owner: str, lease: float) -> Expiry:
        await checkpoint()
        return self._space.expire(owner, lease)

    async def sweep(self) -> int:
        await checkpoint()
        return self._space.sweep()

    # -- reading -----------------------------------------------------------------------

    async def get(self, agent_id: str) -> AgentProfile | None:
        await self.grants()
        stored = self._space.live(agent_id)
        return None if stored is None else self._parse(agent_id, stored.fields())

    async def list_agents(self) -> list[AgentProfile]:
        await self.grants()
        profiles = (self._parse(agent_id, stored.fields()) for agent_id, stored in self._space.rows())
        return [profile for profile in profiles if profile is not None]

    async def capable(self, capability: str) -> list[AgentProfile]:
        """As :meth:`Registry.capable`: the live instances offering ``capability``, offline ones left out."""
        found = [
            p for p in await self.list_agents() if p.status != "offline" and capability in p.proficiencies()
        ]
        found.sort(key=lambda p: -p.proficiencies()[capability])
        return found

    async def find_best_agent(
        self, capabilities: Sequence[str], *, trust_floor: float | None = None
    ) -> Candidate | None:
        """As :meth:`Registry.find_best_agent`: the best available instance, chosen as a view
        chooses among available ones (``RankedEntries.best``), with its score."""
        floor = self._query_floor(capabilities, trust_floor)
        if floor is None:
            return None
        chosen = (await self._available(floor)).best(capabilities)
        if chosen is None:
            return None
        return Candidate(chosen.agent_id, match_score(chosen.proficiencies, capabilities) * chosen.trust)

    async def find_agents_with_capability(
        self, capability: str, *, trust_floor: float | None = None
    ) -> list[AgentProfile]:
        """As :meth:`Registry.find_agents_with_capability` (``RankedEntries`` orders them)."""
        floor = self.trust_floor if trust_floor is None else check_floor(trust_floor)
        return (await self._available(floor)).find_agents_with_capability(capability)

    async def _available(self, floor: float) -> RankedEntries:
        """The available instances, ranked per capability as a view ranks its entries."""
        ranked = RankedEntries(trust_floor=floor)
        for profile in await self.list_agents():
            if profile.status == "available":
                ranked.upsert(profile)
        return ranked
