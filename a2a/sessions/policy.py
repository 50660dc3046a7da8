"""Which remote agents a local profile may send to, how often and how many at once.

Per local profile (and per user, since sessions are the user's): the seed's
``allowSharedAgentCalls`` (default deny), ``allowedSharedDeviceIds`` (the remote agents
allowed; none until listed), ``maxConcurrentSharedCalls`` (3) and ``maxHopCount`` (2),
plus a rate per minute for each (profile, target) pair. The rate and the concurrency are
counted in Redis, so they hold across every process sending for the profile.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

import anyio
import msgspec
import redis.asyncio as aioredis
from msgspec import Meta

from bus.errors import CycleDetected, MaxHopsExceeded, Overloaded, PermissionDenied, Unavailable
from bus.wire import Orchestration, Wire
from discovery.errors import redis_errors
from discovery.registry import RegistryKeys

__all__ = ["SLOT_LEASE", "PolicyStore", "SharedCallPolicy", "check"]

log = logging.getLogger("a2a.sessions")

Positive = Annotated[int, Meta(ge=1)]
SLOT_LEASE = 6.0
"""Seconds a shared call's slot outlives the last renewal by its process (renewed every third of it)."""


class SharedCallPolicy(Wire):
    """The seed's per-profile policy controls; the default denies every remote agent."""

    allow_shared_agent_calls: bool = False
    allowed_shared_device_ids: list[Annotated[str, Meta(max_length=256)]] = []
    max_concurrent_shared_calls: Positive = 3
    max_hop_count: Positive = 2
    max_calls_per_minute: Positive = 30


def check(policy: SharedCallPolicy, control: Orchestration, target: str) -> None:
    """Refuse a send the policy does not allow.

    Raises:
        PermissionDenied: shared calls are off for the profile, or ``target`` is not listed.
        CycleDetected: the profile would send to itself.
        MaxHopsExceeded: the message has come more hops than the policy allows.
    """
    profile = control.orchestrator_profile_id
    if target in (profile, control.origin_agent_device_id):
        raise CycleDetected(
            f"{profile} may not orchestrate a session with itself", details={"target": target}
        )
    if control.hop_count > policy.max_hop_count:
        raise MaxHopsExceeded(
            f"hop {control.hop_count} is over the profile's maxHopCount {policy.max_hop_count}",
            details={"hopCount": control.hop_count, "maxHopCount": policy.max_hop_count},
        )
    if not policy.allow_shared_agent_calls:
        raise PermissionDenied(
            f"{profile} may not call shared agents (allowSharedAgentCalls is off)", details={"target": target}
        )
    if target not in policy.allowed_shared_device_ids:
        raise PermissionDenied(
            f"{target} is not among the agents {profile} may call (allowedSharedDeviceIds)",
            details={"target": target},
        )


_decoder = msgspec.json.Decoder(SharedCallPolicy)
_encode = msgspec.json.Encoder().encode


class PolicyStore:
    """Policies and their counters in Redis (keys ``P session-policy:<user>:<profile>``,
    ``P session-rate:<user>:<profile>:<target>:<minute>``, ``P session-calls:<user>:<profile>``)."""

    def __init__(self, redis: aioredis.Redis, namespace: str, *, slot_lease: float = SLOT_LEASE) -> None:
        self.redis = redis
        self.prefix = RegistryKeys(namespace).prefix
        self.slot_lease = slot_lease

    async def get(self, user_id: str, profile_id: str) -> SharedCallPolicy:
        with redis_errors("read session policy"):
            raw = await self.redis.get(f"{self.prefix}session-policy:{user_id}:{profile_id}")
        if raw is None:
            return SharedCallPolicy()
        try:
            return _decoder.decode(raw)
        except msgspec.DecodeError:
            return SharedCallPolicy()  # unreadable: the default, which denies

    async def set(self, user_id: str, profile_id: str, policy: SharedCallPolicy) -> None:
        with redis_errors("write session policy"):
            await self.redis.set(f"{self.prefix}session-policy:{user_id}:{profile_id}", _encode(policy))

    @asynccontextmanager
    async def admit(
        self, policy: SharedCallPolicy, user_id: str, profile_id: str, target: str
    ) -> AsyncIterator[None]:
        """Hold one of the profile's concurrent shared calls, within the pair's rate, while the block runs.

        Counted per user, like the policy itself: one user's sessions never use up another's.
        The slot is a lease renewed while the block runs, so the slot of a process that dies
        is free again ``slot_lease`` seconds after its last renewal.

        Raises:
            Overloaded: the rate per minute for (profile, target) is used up, or the
                profile has ``maxConcurrentSharedCalls`` in flight.
        """
        minute = int(time.time() // 60)
        rate_key = f"{self.prefix}session-rate:{user_id}:{profile_id}:{target}:{minute}"
        calls_key = f"{self.prefix}session-calls:{user_id}:{profile_id}"
        slot = secrets.token_hex(8)
        now = time.time()
        with redis_errors("admit a shared call"):
            verdict = await self.redis.eval(
                _ADMIT,
                2,
                rate_key,
                calls_key,
                policy.max_calls_per_minute,
                policy.max_concurrent_shared_calls,
                slot,
                now,
                now + self.slot_lease,
            )
        if verdict == b"rate" or verdict == "rate":
            raise Overloaded(
                f"{profile_id} has sent {policy.max_calls_per_minute} messages to {target} this minute",
                details={"limit": "rate", "perMinute": policy.max_calls_per_minute},
            )
        if verdict == b"busy" or verdict == "busy":
            raise Overloaded(
                f"{profile_id} has {policy.max_concurrent_shared_calls} shared calls in flight",
                details={"limit": "maxConcurrentSharedCalls", "max": policy.max_concurrent_shared_calls},
            )
        failed: Exception | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._renew, calls_key, slot)
                try:
                    yield
                except Exception as exc:  # raised below as it came, not wrapped in a group
                    failed = exc
                finally:
                    tg.cancel_scope.cancel()
            if failed is not None:
                raise failed
        finally:
            try:
                with anyio.move_on_after(5, shield=True), redis_errors("release a shared call"):
                    await self.redis.zrem(calls_key, slot)
            except Unavailable as exc:  # the lease, no longer renewed, frees the slot anyway
                log.warning("shared call slot not released: %s", exc)

    async def _renew(self, calls_key: str, slot: str) -> None:
        """Keep the slot's lease ahead of its expiry while the call runs (a lapsed one is taken again)."""
        while True:
            await anyio.sleep(self.slot_lease / 3)
            try:
                with redis_errors("renew a shared call"):
                    async with self.redis.pipeline(transaction=False) as pipe:
                        pipe.zadd(calls_key, {slot: time.time() + self.slot_lease})
                        pipe.expire(calls_key, _CALLS_TTL)
                        await pipe.execute()
            except Unavailable as exc:  # the call goes on; the next renewal may reach Redis
                log.warning("shared call slot not renewed: %s", exc)


_CALLS_TTL = 3600  # seconds the slots' sorted set outlives its last write (as in the script below)

# KEYS: rate, calls. ARGV: per minute, max concurrent, slot, now, slot expiry.
_ADMIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 'busy' end
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], 120) end
if n > tonumber(ARGV[1]) then return 'rate' end
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[3])
redis.call('EXPIRE', KEYS[2], 3600)
return 'ok'
"""
