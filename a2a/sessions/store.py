"""Sessions in Redis: any process may own one, every change is published, nothing lives only in memory.

Keys (``P`` = ``a2a:{<ns>}:``), expiring ``ttl`` seconds after the last write:

    P session:<id>           the Session as JSON; changed only by compare-and-set on ``version``
    P session:<id>:owner     the runtime running its loop, as a lease the owner renews
    P sessions:<user>        sorted set of the user's session ids, by start time
    P session-audit:<profile>  list of AuditEntry JSON, newest last, capped (profile-scoped)

Every change is published on the channel ``P session-events`` as a SessionEvent.
The owner's writes are fenced by its lease: one that no longer holds it writes nothing
(:class:`LeaseLost`). A session whose owner's lease has lapsed waits for a process serving
its user to adopt it (``adoption``); once past its ``maxDurationMs`` it is stopped by
whoever reads it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import msgspec
import redis.asyncio as aioredis

from bus.errors import InvalidEnvelope, InvalidParams, Unavailable
from bus.wire import Wire
from discovery.errors import WriteConflict, redis_errors
from discovery.registry import RegistryKeys

from .machine import move
from .model import TERMINAL, Session, SessionEvent
from .rules import limit_hit

__all__ = ["AuditEntry", "LeaseLost", "NotFound", "SessionStore", "Unreadable"]

AUDIT_ENTRIES = 1000  # per profile
_CAS_TRIES = 50


class NotFound(InvalidParams):
    """No session of this id (or not the caller's: the same answer, so ids are not probed)."""


class Unreadable(InvalidEnvelope):
    """A stored session this version cannot read: nothing will change that by retrying."""


class LeaseLost(RuntimeError):
    """The writer no longer holds the session's lease (another process adopted it): its loop
    ends here. Never sent to a caller: only a loop writes with a lease."""


class AuditEntry(Wire):
    """One turn or state change as the audit keeps it (the seed's fields), redacted."""

    at: float
    session_id: str
    profile_id: str
    target: str
    """The remote agent (the seed's ``sharedDeviceId``)."""
    user_id: str
    turn_index: int
    mode: str
    event: str
    status: str
    duration_ms: int = 0
    failure_reason: str | None = None
    trace_id: str = ""
    hop_count: int = 0


log = logging.getLogger("a2a.sessions")
_session_decoder = msgspec.json.Decoder(Session)
_audit_decoder = msgspec.json.Decoder(AuditEntry)
_encode = msgspec.json.Encoder().encode


class SessionStore:
    def __init__(self, redis: aioredis.Redis, namespace: str, *, ttl: float = 7 * 24 * 3600) -> None:
        self.redis = redis
        self.prefix = RegistryKeys(namespace).prefix
        self.channel = self.prefix + "session-events"
        self.ttl = int(ttl)

    def _key(self, session_id: str, part: str = "") -> str:
        return f"{self.prefix}session:{session_id}{part}"

    async def create(self, session: Session) -> None:
        key = self._key(session.id)
        with redis_errors("create session"):
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.set(key, _encode(session), nx=True, ex=self.ttl)
                pipe.zadd(f"{self.prefix}sessions:{session.user_id}", {session.id: session.started_at})
                pipe.expire(f"{self.prefix}sessions:{session.user_id}", self.ttl)
                pipe.publish(self.channel, _encode(SessionEvent(kind="changed", session=session)))
                created, *_ = await pipe.execute()
        if not created:
            raise InvalidParams(f"session {session.id} exists already")

    async def get(self, session_id: str, user_id: str | None = None) -> Session:
        """The session; one whose owner is gone and whose run is out of time is stopped first.

        Raises:
            NotFound: no such session, or ``user_id`` is given and it is not theirs.
        """
        with redis_errors("read session"):
            raw = await self.redis.get(self._key(session_id))
            if raw is None:
                raise NotFound(f"no session {session_id}", details={"sessionId": session_id})
            session = _decode(raw, session_id)
            if user_id is not None and session.user_id != user_id:
                raise NotFound(f"no session {session_id}", details={"sessionId": session_id})
            if _overdue(session) and not await self.owned(session_id):
                session = await self.update(session_id, _out_of_time)
        return session

    async def of_user(self, user_id: str, limit: int = 100) -> list[Session]:
        with redis_errors("list sessions"):
            ids = await self.redis.zrevrange(f"{self.prefix}sessions:{user_id}", 0, limit - 1)
        found = []
        for session_id in ids:
            try:
                found.append(await self.get(str(session_id), user_id))
            except NotFound:
                continue
            except Unreadable as exc:  # one bad record must not hide the others
                log.warning("%s", exc)
        return found

    async def update(
        self, session_id: str, change: Callable[[Session], Session], *, owner: str | None = None
    ) -> Session:
        """Apply ``change`` atomically (compare-and-set, retried on a concurrent write) and publish it.

        ``change`` gets the stored session and returns the new one; an error it raises
        leaves the session as it was. With ``owner`` (a loop's writes) the write happens only
        while ``owner`` holds the lease, checked in the same transaction.

        Raises:
            LeaseLost: ``owner`` is given and does not hold the lease.
        """
        key = self._key(session_id)
        with redis_errors("update session"):  # the pipeline's reset on leaving, too
            async with self.redis.pipeline(transaction=True) as pipe:
                for _ in range(_CAS_TRIES):
                    try:
                        with redis_errors("update session"):
                            return await self._compare_and_set(pipe, key, session_id, change, owner)
                    except WriteConflict:
                        continue  # another write came first: read it and apply ``change`` again
        raise Unavailable(f"session {session_id} changed {_CAS_TRIES} times while being updated")

    async def _compare_and_set(
        self,
        pipe: aioredis.client.Pipeline,
        key: str,
        session_id: str,
        change: Callable[[Session], Session],
        owner: str | None,
    ) -> Session:
        """One attempt of :meth:`update` on a pipeline in transaction mode (redis-py raises
        WatchError when a watched key changed before EXEC: the record, or the lease when
        another process claims it or the owner renews it)."""
        if owner is None:
            await pipe.watch(key)
        else:
            lease_key = key + ":owner"
            await pipe.watch(key, lease_key)
            holder = await pipe.get(lease_key)
            if holder != owner and holder != owner.encode():
                await pipe.unwatch()  # type: ignore[no-untyped-call]
                raise LeaseLost(f"session {session_id}: {owner} no longer holds its lease")
        raw = await pipe.get(key)
        if raw is None:
            raise NotFound(f"no session {session_id}", details={"sessionId": session_id})
        old = _decode(raw, session_id)
        new = change(old)
        if new is old:
            await pipe.unwatch()  # type: ignore[no-untyped-call]
            return old
        stamp = {} if owner is None else {"owner": owner}  # the writer of a loop's change, for the record
        new = msgspec.structs.replace(new, version=old.version + 1, updated_at=time.time(), **stamp)
        pipe.multi()  # type: ignore[no-untyped-call]
        pipe.set(key, _encode(new), ex=self.ttl)
        pipe.publish(self.channel, _encode(SessionEvent(kind="changed", session=new)))
        await pipe.execute()
        return new

    # -- the owner's lease ----------------------------------------------------------------

    async def claim(self, session_id: str, owner: str, lease: float) -> bool:
        """Take the session's lease for ``owner`` (or renew it); False when another holds it."""
        key = self._key(session_id, ":owner")
        with redis_errors("claim session"):
            if await self.redis.set(key, owner, nx=True, px=int(lease * 1000)):
                return True
            # Renew only our own lease: compare and extend in one script.
            return bool(await self.redis.eval(_RENEW, 1, key, owner, int(lease * 1000)))

    async def release(self, session_id: str, owner: str) -> None:
        with redis_errors("release session"):
            await self.redis.eval(_RELEASE, 1, self._key(session_id, ":owner"), owner)

    async def owned(self, session_id: str) -> bool:
        with redis_errors("session owner"):
            return bool(await self.redis.exists(self._key(session_id, ":owner")))

    async def unowned(self, user_id: str, limit: int = 100) -> list[str]:
        """The ids of the user's latest ``limit`` sessions whose lease nobody holds (ended ones
        included: the caller reads them to tell)."""
        with redis_errors("find unowned sessions"):
            listed = await self.redis.zrevrange(f"{self.prefix}sessions:{user_id}", 0, limit - 1)
            ids = [str(i) for i in listed]
            if not ids:
                return []
            async with self.redis.pipeline(transaction=False) as pipe:
                for session_id in ids:
                    pipe.exists(self._key(session_id, ":owner"))
                held = await pipe.execute()
        return [session_id for session_id, h in zip(ids, held, strict=True) if not h]

    # -- events and audit ------------------------------------------------------------------

    @asynccontextmanager
    async def events(self) -> AsyncIterator[AsyncIterator[SessionEvent]]:
        """The session events published from now on (malformed ones are skipped)."""
        pubsub = self.redis.pubsub()
        with redis_errors("subscribe to session events"):
            await pubsub.subscribe(self.channel)
        try:
            yield _events(pubsub)
        finally:
            with redis_errors("unsubscribe"):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def audit(self, entry: AuditEntry) -> None:
        key = f"{self.prefix}session-audit:{entry.profile_id}"
        with redis_errors("write session audit"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.rpush(key, _encode(entry))
                pipe.ltrim(key, -AUDIT_ENTRIES, -1)
                pipe.expire(key, self.ttl)
                await pipe.execute()

    async def audit_entries(self, profile_id: str, user_id: str) -> list[AuditEntry]:
        """The audit of one local profile, only the entries of ``user_id``'s sessions."""
        with redis_errors("read session audit"):
            raw = await self.redis.lrange(f"{self.prefix}session-audit:{profile_id}", 0, -1)
        entries = []
        for item in raw:
            try:
                entry = _audit_decoder.decode(item)
            except msgspec.DecodeError:
                continue
            if entry.user_id == user_id:
                entries.append(entry)
        return entries


async def _events(pubsub: aioredis.client.PubSub) -> AsyncIterator[SessionEvent]:
    decoder = msgspec.json.Decoder(SessionEvent)
    while True:
        with redis_errors("session events"):
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
        if message is None or message.get("type") != "message":
            continue
        try:
            yield decoder.decode(message["data"])
        except msgspec.DecodeError:
            continue


def _decode(raw: bytes | str, session_id: str) -> Session:
    try:
        return _session_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise Unreadable(
            f"session {session_id} is stored in a form this version cannot read: {exc}"
        ) from None


def _overdue(s: Session) -> bool:
    return s.state not in TERMINAL and time.time() > s.started_at + s.limits.max_duration_ms / 1000


def _out_of_time(s: Session) -> Session:
    ending = limit_hit(s)
    if not _overdue(s) or ending is None:
        return s
    return move(s, "stopped", f"{ending.message} without an owner", ending=ending)


_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
