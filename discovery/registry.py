"""The capability registry on Redis: profiles, heartbeats, best-agent selection."""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.client import NEVER_DECODE
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from bus.rejects import Rejects
from bus.subjects import is_name, validate_name

from . import _scripts
from ._validate import Invalid, parse_instance, text
from .errors import redis_errors
from .profile import AgentProfile, AgentStatus

__all__ = ["Candidate", "InstanceState", "Registry", "RegistryKeys"]

log = logging.getLogger("a2a.discovery.registry")

_profile_encoder = msgspec.json.Encoder()
_FIELDS = ("profile", "status", "load", "capacity", "lastSeen")


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

    Nothing read back is trusted: replies are read as bytes and every entry is validated
    (``discovery._validate``); an invalid one is skipped and counted in :attr:`rejected`.
    Each registration's fingerprint (the SHA-1 of the profile and capabilities written)
    is remembered, and a heartbeat finding its instance's hash altered reports the
    instance as lost, so the caller's re-registration restores it.

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
        self.rejects = Rejects(log, "registry entry")
        self._fingerprints: dict[str, tuple[str, str]] = {}
        """Instance id -> (agent name, SHA-1 of profile + caps) as this registry wrote them."""
        self._raw: aioredis.Redis | None = None

    @property
    def rejected(self) -> int:
        """Invalid entries skipped so far."""
        return self.rejects.total

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
        if self._raw is not None:
            await self._raw.aclose()
        await self.redis.aclose()

    def pubsub(self) -> PubSub:
        """A subscriber whose messages arrive as bytes, whatever the client decodes.

        Anyone may publish anything on the events channel; decoding it is the reader's job,
        not the connection's (a decoding connection fails on the first non-UTF-8 message).
        """
        if self._raw is None:
            pool = self.redis.connection_pool
            kwargs = {**pool.connection_kwargs, "decode_responses": False}
            raw_pool = aioredis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
            self._raw = aioredis.Redis.from_pool(raw_pool)
        return self._raw.pubsub(ignore_subscribe_messages=True)

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
                    profile_json = _profile_encoder.encode(static).decode()
                    caps_json = _profile_encoder.encode(profile.proficiencies()).decode()
                    self._remember(profile.agent_id, profile.name, profile_json + caps_json)
                    await self._register(
                        keys=[
                            self.keys.instance(profile.agent_id),
                            self.keys.instances,
                            self.keys.capindex,
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
                            profile_json,
                            caps_json,
                        ],
                        client=pipe,
                    )
                await pipe.execute()

    async def heartbeat(self, states: Sequence[InstanceState]) -> list[str]:
        """Refresh instances in one pipelined round trip.

        Returns the ids Redis no longer knows (expired, or the server restarted
        empty) or holds altered (profile, capabilities or name differ from what this
        registry registered); the caller re-registers those.
        """
        if not states:
            return []
        now = now_ms()
        with redis_errors("heartbeat"):
            async with self.redis.pipeline(transaction=False) as pipe:
                for s in states:
                    name, fingerprint = self._fingerprints.get(s.agent_id, ("", ""))
                    await self._heartbeat(
                        keys=[self.keys.instance(s.agent_id)],
                        args=[
                            self.keys.prefix,
                            s.agent_id,
                            self._ttl_ms,
                            s.status,
                            s.load,
                            s.capacity,
                            now,
                            name,
                            fingerprint,
                        ],
                        client=pipe,
                    )
                results = await pipe.execute()
        return [s.agent_id for s, ok in zip(states, results, strict=True) if not ok]

    async def deregister(self, agent_id: str) -> None:
        """Remove an instance at once (clean shutdown)."""
        self._fingerprints.pop(agent_id, None)
        with redis_errors("deregister"):
            await self._deregister(
                keys=[
                    self.keys.instance(agent_id),
                    self.keys.instances,
                    self.keys.capindex,
                ],
                args=[self.keys.prefix, agent_id],
            )

    async def find_best_agent(self, capabilities: Sequence[str]) -> Candidate | None:
        """The available instance with the highest mean proficiency over ``capabilities``.

        Busy and offline instances are skipped; ties go to the lower load. One round
        trip (a server-side script) whatever the registry's size. None when no live
        instance offers any of the capabilities. The script only reads: expired ids
        are pruned from the indexes by :meth:`sweep`.
        """
        if not capabilities:
            return None
        with redis_errors("find_best_agent"):
            found = await self._raw_script(
                self._find_best, [self.keys.instances], [self.keys.prefix, *capabilities]
            )
        if not found:
            return None
        try:
            agent_id, score = text(found[0], "id"), float(found[1])
            if not is_name(agent_id) or not math.isfinite(score):
                raise Invalid("id", f"best candidate {agent_id[:60]!r} scored {score}")
        except (Invalid, ValueError, TypeError, IndexError) as exc:
            self.rejects(getattr(exc, "kind", "reply"), exc)
            return None
        return Candidate(agent_id=agent_id, score=score)

    async def find_agents_with_capability(self, capability: str) -> list[AgentProfile]:
        """Every available instance offering ``capability``, best proficiency first (one round trip)."""
        with redis_errors("find_agents_with_capability"):
            flat = await self._raw_script(
                self._find_all, [self.keys.capability(capability)], [self.keys.prefix]
            )
        return self._profiles(flat)

    async def get(self, agent_id: str) -> AgentProfile | None:
        """One instance's profile, or None when it is gone or its entry is invalid."""
        with redis_errors("get"):
            fields = await self.redis.execute_command(  # type: ignore[no-untyped-call]
                "HMGET", self.keys.instance(agent_id), *_FIELDS, **{NEVER_DECODE: True}
            )
        if not fields or fields[0] is None:
            return None
        return self._parse(agent_id, fields)

    async def list_agents(self) -> list[AgentProfile]:
        """Every live instance with a valid entry, in one round trip."""
        with redis_errors("list_agents"):
            flat = await self._raw_script(self._list, [self.keys.instances], [self.keys.prefix])
        return self._profiles(flat)

    async def sweep(self) -> int:
        """Drop expired instances from the indexes (publishing ``down`` events)."""
        with redis_errors("sweep"):
            return int(
                await self._sweep(
                    keys=[self.keys.instances, self.keys.capindex],
                    args=[self.keys.prefix],
                )
            )

    # -- reading foreign bytes -------------------------------------------------------

    def _remember(self, agent_id: str, name: str, written: str) -> None:
        if len(self._fingerprints) >= 100_000 and agent_id not in self._fingerprints:
            self._fingerprints.pop(next(iter(self._fingerprints)))  # bounded: forget the oldest
        self._fingerprints[agent_id] = (name, hashlib.sha1(written.encode()).hexdigest())

    async def _raw_script(self, script: AsyncScript, keys: list[str], args: list[str]) -> Any:
        """Run a read-only script and return its reply undecoded (bytes), loading it when needed.

        EVALSHA_RO: Redis refuses any write from the script, and ACL users with read-only
        rights on the keys (clients) may run it.
        """
        for attempt in (1, 2):
            try:
                return await self.redis.execute_command(  # type: ignore[no-untyped-call]
                    "EVALSHA_RO", script.sha, len(keys), *keys, *args, **{NEVER_DECODE: True}
                )
            except NoScriptError:
                if attempt == 2:
                    raise
                script.sha = await self.redis.script_load(script.script)
        raise AssertionError("unreachable")

    def _profiles(self, flat: object) -> list[AgentProfile]:
        """Valid profiles of a script's flat answer: id, profile, status, load, capacity, lastSeen, ..."""
        if not isinstance(flat, list):
            self.rejects("reply", f"expected a list, got {type(flat).__name__}")
            return []
        profiles = []
        for i in range(0, len(flat) - 5, 6):
            profile = self._parse(flat[i], flat[i + 1 : i + 6])
            if profile is not None:
                profiles.append(profile)
        return profiles

    def _parse(
        self, agent_id: str | bytes | None, fields: Sequence[str | bytes | None]
    ) -> AgentProfile | None:
        try:
            return parse_instance(agent_id, fields)
        except Invalid as exc:
            self.rejects(exc.kind, exc)
            return None
