"""A2A tasks in Redis, shared by every gateway replica of a namespace.

Keys (the namespace's hash tag keeps them in one Redis Cluster slot):

    a2a:{ns}:task:<taskId>        the task (1.0 JSON), its owner and the replica running it
    a2a:{ns}:task-log:<taskId>    its stream events so far, each "<n> <JSON>" (n = 1, 2, ...)
    a2a:{ns}:tasks:<owner>        sorted set of the owner's task ids by last update (ms)
    a2a:{ns}:gw:<replica>         present while that replica is alive (refreshed, expiring)
    a2a:{ns}:push:<taskId>        the task's push-notification configurations (:mod:`.push_store`)

Channels:

    a2a:{ns}:task-events:<taskId> every stream event of the task as it is logged, for subscribers
                                  on any replica
    a2a:{ns}:gw-cancel            "cancel this task": the replica running it cancels its call

A task is written on every change of state, so a replica that restarts, or another one
behind the same load balancer, answers ``GetTask``/``ListTasks`` as the first would. A
task whose replica is gone while it still runs is failed by whoever reads it next.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import msgspec
import redis.asyncio as aioredis

from discovery.errors import redis_errors
from discovery.registry import RegistryKeys
from transports.a2a_http import StreamResponse, Task

__all__ = ["Numbered", "StoredTask", "TaskStore"]

_MAX_PAGE = 100
MAX_LOG = 1000
"""Stream events a task's log keeps (the newest)."""
MAX_FILTERED = 2000
"""Newest tasks of an owner that a filtered ``ListTasks`` looks through."""


class StoredTask(msgspec.Struct, rename="camel", omit_defaults=True):
    """A task and what the gateway needs to know about it besides the protocol's fields."""

    task: Task
    owner: str
    replica: str
    agent: str = ""
    updated: int = 0
    """Milliseconds since the epoch of the last change."""
    durable: bool = False
    """Run as a durable task of the same id (:mod:`a2a.gateway.durable_runs`)."""
    seq: int = 0
    """Stream events numbered so far: the next one is ``seq + 1``."""
    turn: str = ""
    """The durable task of the current turn, when a follow-up message continued the task
    (empty: the task's own id)."""
    resume: dict[str, Any] | None = None
    """While the task waits for input: the parameters that continue the agent's work (its
    INPUT_REQUIRED's ``details.resume``), to which a follow-up message adds ``resume``."""
    asked: str = ""
    """The agent that asked for input (the one a follow-up message goes to)."""


class Numbered(NamedTuple):
    """A stream event and its number in the task's log (its SSE ``id``)."""

    seq: int
    event: StreamResponse


_encode = msgspec.json.Encoder().encode
_decode_task = msgspec.json.Decoder(StoredTask).decode
_decode_event = msgspec.json.Decoder(StreamResponse).decode


class TaskStore:
    """Reads and writes tasks; every method raises ``Unavailable`` when Redis is away."""

    def __init__(self, redis: aioredis.Redis, namespace: str, *, ttl: float = 7 * 24 * 3600) -> None:
        self.redis = redis
        self.prefix = RegistryKeys(namespace).prefix
        self.ttl_ms = int(ttl * 1000)
        self.cancel_channel = f"{self.prefix}gw-cancel"

    def _task(self, task_id: str) -> str:
        return f"{self.prefix}task:{task_id}"

    def _owned(self, owner: str) -> str:
        return f"{self.prefix}tasks:{owner}"

    def events_channel(self, task_id: str) -> str:
        return f"{self.prefix}task-events:{task_id}"

    def _log(self, task_id: str) -> str:
        return f"{self.prefix}task-log:{task_id}"

    def _replica(self, replica: str) -> str:
        return f"{self.prefix}gw:{replica}"

    def push_key(self, task_id: str) -> str:
        return f"{self.prefix}push:{task_id}"

    async def save(self, stored: StoredTask, *events: Numbered) -> list[str]:
        """Write the task, index it under its owner, log and publish ``events``: one round trip.

        Returns the fields of the task's push configurations when ``events`` are given (the
        caller queues their delivery); nothing to do, usually: an empty list.
        """
        stored.updated = now = int(time.time() * 1000)
        task_id = stored.task.id
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(self._task(task_id), _encode(stored), px=self.ttl_ms)
            pipe.zadd(self._owned(stored.owner), {task_id: now})
            pipe.zremrangebyscore(self._owned(stored.owner), 0, now - self.ttl_ms)
            pipe.pexpire(self._owned(stored.owner), self.ttl_ms)
            if events:
                lines = [b"%d %s" % (seq, _encode(event)) for seq, event in events]
                pipe.rpush(self._log(task_id), *lines)
                pipe.ltrim(self._log(task_id), -MAX_LOG, -1)
                pipe.pexpire(self._log(task_id), self.ttl_ms)
                for line in lines:
                    pipe.publish(self.events_channel(task_id), line)
                pipe.hkeys(self.push_key(task_id))
            with redis_errors("save task"):
                results = await pipe.execute()
        if not events or not results[-1]:
            return []
        fields = (f.decode(errors="replace") if isinstance(f, bytes) else str(f) for f in results[-1])
        return [f for f in fields if "#" not in f]

    async def events_after(self, task_id: str, after: int) -> list[Numbered]:
        """The task's logged events numbered after ``after``, in order."""
        with redis_errors("read task events"):
            lines = await self.redis.lrange(self._log(task_id), 0, -1)
        found = (self.decode_event(line) for line in lines)
        return sorted((n for n in found if n is not None and n.seq > after), key=lambda n: n.seq)

    async def load(self, task_id: str) -> StoredTask | None:
        """The task, or None when unknown, expired or unreadable (a corrupt entry is not a task)."""
        with redis_errors("read task"):
            raw = await self.redis.get(self._task(task_id))
        if raw is None:
            return None
        try:
            return _decode_task(raw)
        except msgspec.DecodeError:
            return None

    async def page(
        self,
        owner: str,
        *,
        offset: int,
        size: int,
        context_id: str = "",
        state: str | None = None,
        after: datetime.datetime | None = None,
        agent: str | None = None,
    ) -> tuple[list[StoredTask], int, int | None]:
        """Tasks of ``owner`` (sent to ``agent``, if given), newest first: (page, how many
        match, next offset or None).

        Without filters a page is one range read; with filters the owner's newest
        ``MAX_FILTERED`` tasks are read and filtered, and offsets count matching tasks.
        """
        size = max(1, min(size, _MAX_PAGE))
        key = self._owned(owner)
        filtered = bool(context_id or state or after) or agent is not None
        with redis_errors("list tasks"):
            if not filtered:
                total = int(await self.redis.zcard(key))
                found = await self._read(owner, await self.redis.zrevrange(key, offset, offset + size - 1))
                following = offset + size
                return found, total, following if following < total else None
            ids = await self.redis.zrevrange(key, 0, MAX_FILTERED - 1)
            matching = []
            for start in range(0, len(ids), _MAX_PAGE):
                for stored in await self._read(owner, ids[start : start + _MAX_PAGE]):
                    task = stored.task
                    if agent is not None and stored.agent != agent:
                        continue
                    if context_id and task.context_id != context_id:
                        continue
                    if state and task.status.state != state:
                        continue
                    if after is not None and not _later(task.status.timestamp, after):
                        continue
                    matching.append(stored)
        following = offset + size
        return matching[offset:following], len(matching), following if following < len(matching) else None

    async def _read(self, owner: str, ids: list[Any]) -> list[StoredTask]:
        """The readable tasks of ``owner`` among ``ids`` (expired and corrupt ones are skipped)."""
        if not ids:
            return []
        names = [self._task(i.decode() if isinstance(i, bytes) else str(i)) for i in ids]
        found = []
        for raw in await self.redis.mget(names):
            if raw is None:
                continue
            try:
                stored = _decode_task(raw)
            except msgspec.DecodeError:
                continue
            if stored.owner == owner:
                found.append(stored)
        return found

    # -- replicas ------------------------------------------------------------------

    async def alive(self, replica: str, ttl: float) -> None:
        with redis_errors("gateway heartbeat"):
            await self.redis.set(self._replica(replica), b"1", px=int(ttl * 1000))

    async def gone(self, replica: str) -> None:
        with redis_errors("gateway stop"):
            await self.redis.delete(self._replica(replica))

    async def is_alive(self, replica: str) -> bool:
        with redis_errors("gateway liveness"):
            return bool(await self.redis.exists(self._replica(replica)))

    async def request_cancel(self, task_id: str) -> None:
        with redis_errors("cancel task"):
            await self.redis.publish(self.cancel_channel, task_id.encode())

    @asynccontextmanager
    async def listen(self, *channels: str) -> AsyncIterator[aioredis.client.PubSub]:
        """A pub/sub connection subscribed to ``channels``, closed on exit."""
        pubsub = self.redis.pubsub()
        try:
            with redis_errors("subscribe"):
                await pubsub.subscribe(*channels)
            yield pubsub
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]

    @staticmethod
    def decode_event(raw: Any) -> Numbered | None:
        """A logged or published event (``b"<n> <JSON>"``), or None for anything else."""
        if isinstance(raw, str):
            raw = raw.encode()
        if not isinstance(raw, bytes):
            return None
        number, _, data = raw.partition(b" ")
        if not number.isdigit() or len(number) > 12:
            return None
        try:
            return Numbered(int(number), _decode_event(data))
        except (msgspec.DecodeError, TypeError):
            return None


def encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o{offset}".encode()).decode().rstrip("=")


def decode_token(token: str) -> int:
    """Offset of a page token; ValueError for a token this gateway did not make."""
    if not token:
        return 0
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("invalid page token") from None
    if not text.startswith("o") or not text[1:].isdigit() or len(text) > 12:
        raise ValueError("invalid page token")
    return int(text[1:])


def parse_timestamp(text: str) -> datetime.datetime:
    """An RFC 3339 timestamp (``Z`` or an offset); ValueError otherwise."""
    moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {text!r}")
    return moment


def _later(timestamp: str, after: datetime.datetime) -> bool:
    """At or after ``after``, as the SDK's task stores compare."""
    try:
        return parse_timestamp(timestamp) >= after
    except ValueError:
        return False
