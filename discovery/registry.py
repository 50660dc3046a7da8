"""The capability registry on Redis: profiles, heartbeats, best-agent selection."""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Sequence
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.maint_notifications import MaintNotificationsConfig

from bus.subjects import is_name

from ._beats import Beats
from ._calls import LibraryCalls
from ._records import Candidate, Expiry, InstanceState, RegistryKeys, trust_arg
from ._scripts import FUNCTIONS, MAX_PAGE, MAX_QUERY
from ._validate import Invalid, text
from .cluster import is_cluster_url, namespace_client
from .errors import redis_errors
from .limits import check_limits, check_size
from .profile import AgentProfile
from .scoring import routable, trust_weight
from .trust import DEFAULT_TRUST_FLOOR, check_floor

__all__ = ["Candidate", "Expiry", "InstanceState", "Registry", "RegistryKeys"]

log = logging.getLogger("a2a.discovery.registry")

_profile_encoder = msgspec.json.Encoder()
MAX_LIST_PAGES = 1000
"""Pages of ``MAX_PAGE`` ids one listing reads at most (a set padded with fakes ends it early)."""
MAX_SWEEP_PAGES = 64
"""Pages one :meth:`Registry.sweep` prunes at most; the next sweep goes on where it stopped."""
_STALE_CHECKED: dict[str, Any] = (
    {"maint_notifications_config": MaintNotificationsConfig(enabled=False)}
    if "maint_notifications_config" in inspect.signature(aioredis.ConnectionPool.__init__).parameters
    else {}
)
"""Options that keep a pool checking each idle connection before handing it out.

With maintenance notifications on (redis-py 8's default, for Redis Cloud's endpoint moves)
the pool skips that check, so after a server restart every pooled connection fails its
next command: a heartbeat or a history write lost though the server is back. The commands
are not retried instead: one lost with the command in flight may have run."""
_MAX_COUNTED = 1024
"""Invalid trust fields one search reports at most (it scores at most 1,024 instances)."""


def _done(cursor: object) -> bool:
    return cursor in (b"0", "0", 0)


class Registry(LibraryCalls):
    """Agent instances and their capabilities, kept in Redis.

    An instance's hash expires ``ttl`` seconds after its last heartbeat (3 heartbeat
    intervals by default), so a process that dies without deregistering disappears by
    itself. Every write publishes a change event on ``keys.events`` for local views.
    Each operation calls the registry's Redis function library (``discovery._scripts``),
    loading it first when the server lacks it and this user may (``discovery._library``).

    Nothing read back is trusted: replies are read as bytes and every entry is validated
    (``discovery._validate``, sizes by ``discovery.limits``); an invalid one is skipped
    and counted in :attr:`rejected`. Each registration's fingerprint (the SHA-1 of the
    profile and capabilities written) is remembered, and a heartbeat finding its
    instance's hash altered reports the instance as lost, so the caller's
    re-registration restores it.

    Routing by capability (:meth:`find_best_agent`, :meth:`find_agents_with_capability`)
    weighs each instance's match score by its published trust (1 when it publishes
    none) and skips instances trusted less than ``trust_floor`` (``discovery.scoring``).

    All methods raise :class:`bus.errors.Unavailable` when Redis cannot be reached or
    the library is missing and this user may not load it.
    """

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        namespace: str = "default",
        heartbeat_interval: float = 1.0,
        missed_heartbeats: int = 3,
        trust_floor: float = DEFAULT_TRUST_FLOOR,
    ) -> None:
        super().__init__(redis, RegistryKeys(namespace))
        self.trust_floor = check_floor(trust_floor)
        self.namespace = namespace
        self.heartbeat_interval = heartbeat_interval
        self.ttl = heartbeat_interval * missed_heartbeats
        self._beats = Beats(self.keys, self._ttl_ms)
        """What this registry wrote of its instances, and its heartbeats' commands."""
        self._raw: aioredis.Redis | None = None
        self._sweep_cursor: bytes | str | int = b"0"

    @classmethod
    def from_url(cls, url: str, **kwargs: object) -> Registry:
        """A registry on the Redis server at ``url`` (``redis://host:port/db``).

        On a Redis Cluster (``redis+cluster://host1:port1,host2:port2``) the client talks to
        the master of the namespace's slot, whichever node that is (``discovery.cluster``).
        """
        options: dict[str, Any] = dict(decode_responses=True, socket_connect_timeout=2.0, socket_timeout=5.0)
        options["health_check_interval"] = 10
        namespace = str(kwargs.get("namespace", "default"))
        cluster = is_cluster_url(url)
        client = (
            namespace_client(url, namespace, **options)
            if cluster
            else aioredis.Redis.from_url(url, **options, **_STALE_CHECKED)
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
            raw_pool = aioredis.ConnectionPool(
                connection_class=pool.connection_class, **kwargs, **_STALE_CHECKED
            )
            self._raw = aioredis.Redis.from_pool(raw_pool)
        return self._raw.pubsub(ignore_subscribe_messages=True)

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    async def register(self, profile: AgentProfile) -> None:
        """Add or replace an instance; it stays while heartbeats keep coming.

        Raises:
            discovery.limits.EntryTooLarge: the profile is over the registry's size bounds
                (a ValueError; nothing is written).
        """
        await self.register_many([profile])

    async def register_many(self, profiles: Sequence[AgentProfile]) -> None:
        """Add or replace instances in one pipelined round trip (EntryTooLarge as :meth:`register`).

        Raises:
            discovery.errors.RegistrationRefused: the roster does not let an instance's agent
                advertise what it declares, or run one more instance (the others are written).
        """
        calls = []
        written: list[str] = []
        for profile in profiles:
            check_limits(profile)
            static = msgspec.structs.replace(
                profile, status="available", load=0, capacity=0, last_seen=0, trust=None
            )
            profile_json = _profile_encoder.encode(static).decode()
            check_size(profile.agent_id, len(profile_json))
            caps_json = _profile_encoder.encode(profile.proficiencies()).decode()
            keys = [self.keys.instance(profile.agent_id), self.keys.instances, self.keys.capsof]
            args = [self.keys.prefix, profile.agent_id, self._ttl_ms, profile.name, profile.status]
            args += [profile.load, profile.capacity, profile_json, caps_json, trust_arg(profile.trust)]
            calls.append(("FCALL", FUNCTIONS["register"], len(keys), *keys, *args))
            written.append(profile_json + caps_json)
        with redis_errors("register"):
            replies = await self._pipelined(calls, raise_on_error=False)
            # Only what Redis took is remembered: a refused instance beats in full (and is
            # refused again), never by bare expiry pushes that would keep an old hash alive.
            refused = None
            for profile, text, reply in zip(profiles, written, replies, strict=True):
                if isinstance(reply, Exception):
                    refused = refused or reply
                    self._beats.forget(profile.agent_id)
                else:
                    self._beats.remember(profile, text, trust_arg(profile.trust))
            if refused is not None:
                raise refused

    async def heartbeat(self, states: Sequence[InstanceState]) -> list[str]:
        """Refresh instances in one pipelined round trip.

        Views hear of a heartbeat only when it changes what routing reads (status,
        capacity, trust, or load by ``LOAD_STEP`` of the capacity): their traffic follows
        change, not the registry's size.

        Returns the ids Redis no longer knows (expired, or the server restarted empty)
        or holds altered (profile, capabilities or name differ from what this registry
        registered); the caller re-registers those.
        """
        if not states:
            return []
        plan = self._beats.plan(states)
        with redis_errors("heartbeat"):
            replies = await self._pipelined(plan.commands)
        return self._beats.lost(plan, replies)

    async def deregister(self, agent_id: str) -> None:
        """Remove an instance at once (clean shutdown)."""
        self._beats.forget(agent_id)
        keys = [self.keys.instance(agent_id), self.keys.instances, self.keys.capsof]
        with redis_errors("deregister"):
            await self._pipelined(
                [("FCALL", FUNCTIONS["deregister"], len(keys), *keys, self.keys.prefix, agent_id)]
            )

    def _query_floor(self, capabilities: Sequence[str], trust_floor: float | None) -> float | None:
        """The trust floor of a search for ``capabilities`` (None: no capability, nothing to find).

        Raises:
            ValueError: more than 16 capabilities, or a floor outside [0, 1].
        """
        if not capabilities:
            return None
        if len(capabilities) > MAX_QUERY:
            raise ValueError(
                f"find_best_agent takes at most {MAX_QUERY} capabilities, got {len(capabilities)}"
            )
        return self.trust_floor if trust_floor is None else check_floor(trust_floor)

    async def find_best_agent(
        self, capabilities: Sequence[str], *, trust_floor: float | None = None
    ) -> Candidate | None:
        """The available instance with the highest mean proficiency over ``capabilities`` times trust.

        Busy and offline instances are skipped, and so are instances trusted less than
        ``trust_floor`` (default: the registry's) or whose trust field is invalid (counted
        in :attr:`rejected`); ties go to the lower load. One round trip (a server-side
        function) whatever the registry's size: it scores at most 1,024 instances, so
        sorted sets padded with entries of no live instance give the best found among
        those (with a warning). None when no live instance offers any of the
        capabilities. It only reads: expired ids are pruned by :meth:`sweep`.

        Raises:
            ValueError: more than 16 capabilities, or a floor outside [0, 1].
        """
        floor = self._query_floor(capabilities, trust_floor)
        if floor is None:
            return None
        with redis_errors("find_best_agent"):
            found = await self._read(
                "find_best", [self.keys.instances], [self.keys.prefix, floor, *capabilities]
            )
        try:
            for _ in range(min(int(found[3]), _MAX_COUNTED)):
                self.rejects("trust", "an instance with an invalid trust field, skipped by find_best_agent")
            if found[2]:
                self._warn_bounded("registry search stopped early: capability sets hold many stale entries")
            if not found[0]:
                return None
            agent_id, score = text(found[0], "id"), float(found[1])
            if not is_name(agent_id) or not math.isfinite(score):
                raise Invalid("id", f"best candidate {agent_id[:60]!r} scored {score}")
        except (Invalid, ValueError, TypeError, IndexError) as exc:
            self.rejects(getattr(exc, "kind", "reply"), exc)
            return None
        return Candidate(agent_id=agent_id, score=score)

    async def find_agents_with_capability(
        self, capability: str, *, trust_floor: float | None = None
    ) -> list[AgentProfile]:
        """Every available instance offering ``capability`` and trusted at least ``trust_floor``.

        Best proficiency times trust first (equal ones by proficiency). ``trust_floor``
        defaults to the registry's. Read a page at a time; at most ``MAX_LIST_PAGES``
        pages (with a warning).
        """
        floor = self.trust_floor if trust_floor is None else check_floor(trust_floor)
        await self.grants()
        found = await self._with_capability(capability)
        weighed = [
            (p.proficiencies().get(capability, 0.0) * trust_weight(p.trust), p)
            for p in found
            if routable(p.trust, floor)
        ]
        weighed.sort(key=lambda pair: -pair[0])  # stable: the server's order among equals
        return [p for _, p in weighed]

    async def capable(self, capability: str) -> list[AgentProfile]:
        """Every live instance offering ``capability`` that is not offline, busy ones included
        (what a view loads when it starts following the capability), best proficiency first."""
        await self.grants()
        return await self._with_capability(capability, busy=True)

    async def _with_capability(self, capability: str, *, busy: bool = False) -> list[AgentProfile]:
        """Every available (or, with ``busy``, not offline) instance offering ``capability``,
        best proficiency first (no trust)."""
        profiles: list[AgentProfile] = []
        offset: object = 0
        extra = ["busy"] if busy else []
        with redis_errors("find_agents_with_capability"):
            for _ in range(MAX_LIST_PAGES):
                flat = await self._read(
                    "find_all",
                    [self.keys.capability(capability)],
                    [self.keys.prefix, offset, MAX_PAGE, *extra],
                )
                offset = flat[0] if isinstance(flat, list) and flat else 0
                profiles += self._profiles(flat[1:] if isinstance(flat, list) else flat)
                if _done(offset):
                    return profiles
        self._warn_bounded(f"listed the first {len(profiles)} instances with {capability!r} only")
        return profiles

    async def get(self, agent_id: str) -> AgentProfile | None:
        """One instance's profile, or None when it is gone, its entry is invalid or its agent
        may not advertise what it does."""
        await self.grants()
        with redis_errors("get"):
            fields = await self._read("get", [self.keys.instance(agent_id)], [])
        if not isinstance(fields, list) or not fields or fields[0] is None:
            return None
        return self._parse(agent_id, fields)

    async def list_agents(self) -> list[AgentProfile]:
        """Every live instance with a valid entry, a page of ids per round trip.

        At most ``MAX_LIST_PAGES`` pages (with a warning): an ``instances`` set padded
        with ids of no live instance costs round trips, never a long call.
        """
        profiles: list[AgentProfile] = []
        cursor: object = b"0"
        await self.grants()
        with redis_errors("list_agents"):
            for _ in range(MAX_LIST_PAGES):
                flat = await self._read("list", [self.keys.instances], [self.keys.prefix, cursor, MAX_PAGE])
                cursor = flat[0] if isinstance(flat, list) and flat else b"0"
                profiles += self._profiles(flat[1:] if isinstance(flat, list) else flat)
                if _done(cursor):
                    return profiles
        self._warn_bounded(f"listed {len(profiles)} instances only: the instances set is too large")
        return profiles

    async def expire_due(self, owner: str, lease: float) -> Expiry:
        """Announce instances whose expiry has passed (``down`` events), if ``owner`` holds the sweeper lease.

        One process at a time sweeps: the first to call takes a lease of ``lease`` seconds
        and renews it with each call; the others learn when it ends. The returned
        :class:`Expiry` says when to call again.
        """
        keys = [self.keys.expiry, self.keys.instances, self.keys.capsof, self.keys.sweeper]
        with redis_errors("expire"):
            (reply,) = await self._pipelined(
                [
                    (
                        "FCALL",
                        FUNCTIONS["expire"],
                        len(keys),
                        *keys,
                        self.keys.prefix,
                        owner,
                        max(1, int(lease * 1000)),
                    )
                ]
            )
        try:
            held, removed, wait_ms = (int(x) for x in reply)
        except (TypeError, ValueError) as exc:
            self.rejects("reply", f"expire answered {reply!r:.100}: {exc}")
            return Expiry(held=False, removed=0, wait=lease)
        return Expiry(held=bool(held), removed=removed, wait=None if wait_ms < 0 else wait_ms / 1000)

    async def sweep(self) -> int:
        """Drop expired instances from the indexes (publishing ``down`` events); returns how many.

        A pass over the ``instances`` set, a page per call and at most
        ``MAX_SWEEP_PAGES`` pages per sweep: the next sweep resumes at the cursor.
        """
        removed = 0
        keys = [self.keys.instances, self.keys.capsof]
        with redis_errors("sweep"):
            for _ in range(MAX_SWEEP_PAGES):
                args = [self.keys.prefix, self._sweep_cursor, MAX_PAGE]
                (reply,) = await self._pipelined([("FCALL", FUNCTIONS["sweep"], len(keys), *keys, *args)])
                self._sweep_cursor, count = reply[0], int(reply[1])
                removed += count
                if _done(self._sweep_cursor):
                    break
        return removed
