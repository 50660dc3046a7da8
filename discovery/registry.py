"""The capability registry on Redis: profiles, heartbeats, best-agent selection."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import redis.asyncio as aioredis

from bus.subjects import validate_name

from . import _scripts
from .errors import redis_errors
from .profile import AgentProfile, AgentStatus

__all__ = ["Candidate", "InstanceState", "Registry", "RegistryKeys"]

_profile_encoder = msgspec.json.Encoder()
_profile_decoder = msgspec.json.Decoder(AgentProfile)


def now_ms() -> int:
    return int(time.time() * 1000)


class RegistryKeys:
    """Redis key names of one namespace (see ``discovery._scripts`` for the layout)."""

    def __init__(self, namespace: str) -> None:
        validate_name("namespace", namespace)
        self.prefix = f"a2a:{{{namespace}}}:"
        self.instances = self.prefix + "instances"
        self.capindex = self.prefix + "capindex"
        self.events = self.prefix + "events"

    def instance(self, agent_id: str) -> str:
        return f"{self.prefix}inst:{agent_id}"

    def capability(self, cap_id: str) -> str:
        return f"{self.prefix}cap:{cap_id}"


@dataclass(frozen=True, slots=True)
class InstanceState:
    """What a heartbeat reports for one instance."""

    agent_id: str
    status: AgentStatus
    load: int
    capacity: int


@dataclass(frozen=True, slots=True)
class Candidate:
    """The best instance for a set of capabilities, and its match score."""

    agent_id: str
    score: float


class Registry:
    """Agent instances and their capabilities, kept in Redis.

    An instance's hash expires ``ttl`` seconds after its last heartbeat (3 heartbeat
    intervals by default), so a process that dies without deregistering disappears by
    itself. Every write publishes a change event on ``keys.events`` for local views.

    All methods raise :class:`bus.errors.Unavailable` when Redis cannot be reached.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        namespace: str = "default",
        heartbeat_interval: float = 1.0,
        missed_heartbeats: int = 3,
    ) -> None:
        self.redis = redis
        self.namespace = namespace
        self.keys = RegistryKeys(namespace)
        self.heartbeat_interval = heartbeat_interval
        self.ttl = heartbeat_interval * missed_heartbeats
        self._register = redis.register_script(_scripts.REGISTER)
        self._heartbeat = redis.register_script(_scripts.HEARTBEAT)
        self._deregister = redis.register_script(_scripts.DEREGISTER)
        self._find_best = redis.register_script(_scripts.FIND_BEST)
        self._list = redis.register_script(_scripts.LIST)
        self._find_all = redis.register_script(_scripts.FIND_ALL)
        self._sweep = redis.register_script(_scripts.SWEEP)

    @classmethod
    def from_url(cls, url: str, **kwargs: object) -> Registry:
        """A registry on the Redis server at ``url`` (``redis://host:port/db``)."""
        client = aioredis.Redis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=2.0,
            socket_timeout=5.0,
            health_check_interval=10,
        )
        return cls(client, **kwargs)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        await self.redis.aclose()

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    async def register(self, profile: AgentProfile) -> None:
        """Add or replace an instance; it stays while heartbeats keep coming."""
        await self.register_many([profile])

    async def register_many(self, profiles: Sequence[AgentProfile]) -> None:
        """Add or replace instances in one pipelined round trip."""
        now = now_ms()
        with redis_errors("register"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for profile in profiles:
                    static = msgspec.structs.replace(
                        profile, status="available", load=0, capacity=0, last_seen=0
                    )
                    await self._register(
                        keys=[
                            self.keys.instance(profile.agent_id),
                            self.keys.instances,
                            self.keys.capindex,
                            self.keys.events,
                        ],
                        args=[
                            self.keys.prefix,
                            profile.agent_id,
                            self._ttl_ms,
                            profile.name,
                            profile.status,
                            profile.load,
                            profile.capacity,
                            now,
                            _profile_encoder.encode(static).decode(),
                            _profile_encoder.encode(profile.proficiencies()).decode(),
                        ],
                        client=pipe,
                    )
                await pipe.execute()

    async def heartbeat(self, states: Sequence[InstanceState]) -> list[str]:
        """Refresh instances in one pipelined round trip.

        Returns the ids Redis no longer knows (expired, or the server restarted
        empty); the caller re-registers those.
        """
        if not states:
            return []
        now = now_ms()
        with redis_errors("heartbeat"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for s in states:
                    await self._heartbeat(
                        keys=[self.keys.instance(s.agent_id), self.keys.events],
                        args=[
                            self.keys.prefix,
                            s.agent_id,
                            self._ttl_ms,
                            s.status,
                            s.load,
                            s.capacity,
                            now,
                        ],
                        client=pipe,
                    )
                results = await pipe.execute()
        return [s.agent_id for s, ok in zip(states, results, strict=True) if not ok]

    async def deregister(self, agent_id: str) -> None:
        """Remove an instance at once (clean shutdown)."""
        with redis_errors("deregister"):
            await self._deregister(
                keys=[self.keys.instance(agent_id), self.keys.instances, self.keys.events],
                args=[self.keys.prefix, agent_id],
            )

    async def find_best_agent(self, capabilities: Sequence[str]) -> Candidate | None:
        """The available instance with the highest mean proficiency over ``capabilities``.

        Busy and offline instances are skipped; ties go to the lower load. One round
        trip (a server-side script) whatever the registry's size. None when no live
        instance offers any of the capabilities.
        """
        if not capabilities:
            return None
        with redis_errors("find_best_agent"):
            found = await self._find_best(
                keys=[self.keys.instances, self.keys.events], args=[self.keys.prefix, *capabilities]
            )
        if not found:
            return None
        return Candidate(agent_id=found[0], score=float(found[1]))

    async def find_agents_with_capability(self, capability: str) -> list[AgentProfile]:
        """Every available instance offering ``capability``, best proficiency first (one round trip)."""
        with redis_errors("find_agents_with_capability"):
            flat = await self._find_all(keys=[self.keys.capability(capability)], args=[self.keys.prefix])
        return _profiles(flat)

    async def get(self, agent_id: str) -> AgentProfile | None:
        """One instance's profile, or None when it is gone."""
        with redis_errors("get"):
            h = await self.redis.hmget(
                self.keys.instance(agent_id), ["profile", "status", "load", "capacity", "lastSeen"]
            )
        if h[0] is None:
            return None
        return _profile(h)

    async def list_agents(self) -> list[AgentProfile]:
        """Every live instance, in one round trip."""
        with redis_errors("list_agents"):
            flat = await self._list(keys=[self.keys.instances], args=[self.keys.prefix])
        return _profiles(flat)

    async def sweep(self) -> int:
        """Drop expired instances from the indexes (publishing ``down`` events)."""
        with redis_errors("sweep"):
            return int(
                await self._sweep(
                    keys=[self.keys.instances, self.keys.capindex, self.keys.events],
                    args=[self.keys.prefix],
                )
            )


def _profiles(flat: Sequence[str | bytes | None]) -> list[AgentProfile]:
    """Profiles from a script's flat answer: id, profile, status, load, capacity, lastSeen, ..."""
    return [_profile(flat[i + 1 : i + 6]) for i in range(0, len(flat), 6)]


def _profile(fields: Sequence[str | bytes | None]) -> AgentProfile:
    profile_json, status, load, capacity, last_seen = fields
    assert profile_json is not None
    profile = _profile_decoder.decode(profile_json)
    profile.status = str(status)  # type: ignore[assignment]
    profile.load = int(load or 0)
    profile.capacity = int(capacity or 0)
    profile.last_seen = int(last_seen or 0)
    return profile
