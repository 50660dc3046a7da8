"""Push-notification configurations and their delivery queue in Redis, shared by every replica.

Keys (``P`` = ``a2a:{ns}:``; a *channel* is one configuration of one task, ``<taskId>|<configId>``):

    P push:<taskId>         hash: ``<configId>`` -> the configuration (JSON, with its owner and
                            signing secret); ``<configId>#sent`` -> the number of the last event
                            delivered; ``<configId>#tries`` -> failed attempts and the time of the
                            first. Expires with the task.
    P pushes:<owner>        sorted set of the owner's channels by creation time (the per-user cap)
    P push-due              sorted set: channel -> when it is next due (ms since the epoch)
    P push-lease:<channel>  the replica delivering that channel now (expiring)

The queue holds channels, not copies of events: the events are the task's log
(``task-log:<taskId>``), and a channel's ``#sent`` is its cursor in it. A new event makes each
channel of its task due (``ZADD NX``, so a channel waiting out a back-off keeps its time);
a replica claims a due channel with ``SET NX PX`` on its lease, posts the events after the
cursor in order, and either removes the channel from the queue or puts it back at its next
try. A replica that dies mid-delivery leaves the channel in the queue: its lease expires and
another replica (or the same one, restarted) delivers it, from the cursor.
"""

from __future__ import annotations

import time

import msgspec
import redis.asyncio as aioredis

from discovery.errors import redis_errors
from transports.a2a_http import TaskPushNotificationConfig

from .tasks import TaskStore

__all__ = ["Progress", "PushStore", "StoredConfig", "channel_of", "split_channel"]

_SEP = "|"


class StoredConfig(msgspec.Struct, rename="camel", omit_defaults=True):
    """A push configuration as kept: the client's config, its owner and its signing secret."""

    config: TaskPushNotificationConfig
    owner: str
    secret: str
    created: int = 0


class Progress(msgspec.Struct, array_like=True):
    """Failed attempts in a row at a channel's next event, and when the first of them was (ms)."""

    tries: int = 0
    since: int = 0


_encode = msgspec.json.Encoder().encode
_decode_config = msgspec.json.Decoder(StoredConfig).decode
_decode_progress = msgspec.json.Decoder(Progress).decode


def channel_of(task_id: str, config_id: str) -> str:
    return f"{task_id}{_SEP}{config_id}"


def split_channel(channel: str) -> tuple[str, str]:
    task_id, _, config_id = channel.rpartition(_SEP)
    return task_id, config_id


def _text(raw: bytes | str) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else raw


def _now() -> int:
    return int(time.time() * 1000)


class PushStore:
    """Reads and writes push configurations and the delivery queue; raises ``Unavailable``
    when Redis is away."""

    def __init__(self, tasks: TaskStore) -> None:
        self.redis: aioredis.Redis = tasks.redis
        self.prefix = tasks.prefix
        self.ttl_ms = tasks.ttl_ms
        self.configs_key = tasks.push_key
        self.due_key = f"{self.prefix}push-due"

    def _owned(self, owner: str) -> str:
        return f"{self.prefix}pushes:{owner}"

    def _lease(self, channel: str) -> str:
        return f"{self.prefix}push-lease:{channel}"

    # -- configurations --------------------------------------------------------------

    async def config_ids(self, task_id: str) -> list[str]:
        with redis_errors("read push configurations"):
            fields = await self.redis.hkeys(self.configs_key(task_id))
        return sorted(f for f in map(_text, fields) if "#" not in f)

    async def owned_count(self, owner: str) -> int:
        key = self._owned(owner)
        with redis_errors("count push configurations"):
            await self.redis.zremrangebyscore(key, 0, _now() - self.ttl_ms)
            return int(await self.redis.zcard(key))

    async def put(self, stored: StoredConfig, sent: int) -> None:
        """Write (or replace) a configuration whose delivery starts after event ``sent``; make it due."""
        config = stored.config
        key = self.configs_key(config.task_id)
        stored.created = now = _now()
        channel = channel_of(config.task_id, config.id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping={config.id: _encode(stored), f"{config.id}#sent": sent})
            pipe.hdel(key, f"{config.id}#tries")
            pipe.pexpire(key, self.ttl_ms)
            pipe.zadd(self._owned(stored.owner), {channel: now})
            pipe.pexpire(self._owned(stored.owner), self.ttl_ms)
            pipe.zadd(self.due_key, {channel: now})
            with redis_errors("write push configuration"):
                await pipe.execute()

    async def get(self, task_id: str, config_id: str) -> StoredConfig | None:
        with redis_errors("read push configuration"):
            raw = await self.redis.hget(self.configs_key(task_id), config_id)
        if raw is None:
            return None
        try:
            return _decode_config(raw)
        except msgspec.DecodeError:
            return None

    async def all(self, task_id: str) -> list[StoredConfig]:
        with redis_errors("read push configurations"):
            found = await self.redis.hgetall(self.configs_key(task_id))
        configs = []
        for field, raw in sorted(found.items()):
            if "#" in _text(field):
                continue
            try:
                configs.append(_decode_config(raw))
            except msgspec.DecodeError:
                continue
        return configs

    async def delete(self, task_id: str, config_id: str, owner: str) -> bool:
        """Remove a configuration (its queued deliveries go with it); False if there was none."""
        key = self.configs_key(task_id)
        channel = channel_of(task_id, config_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hdel(key, config_id, f"{config_id}#sent", f"{config_id}#tries")
            pipe.zrem(self._owned(owner), channel)
            pipe.zrem(self.due_key, channel)
            with redis_errors("delete push configuration"):
                removed, *_ = await pipe.execute()
        return bool(removed)

    # -- the queue -------------------------------------------------------------------

    async def wake(self, task_id: str, config_ids: list[str]) -> None:
        """New events of the task: each channel is due now, unless it already waits in the queue."""
        with redis_errors("queue push notifications"):
            await self.redis.zadd(self.due_key, {channel_of(task_id, c): _now() for c in config_ids}, nx=True)

    async def due(self, limit: int) -> tuple[list[str], int | None]:
        """Channels due now (at most ``limit``), and when the next one is due (ms; None: none queued)."""
        now = _now()
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zrangebyscore(self.due_key, "-inf", now, start=0, num=limit)
            pipe.zrange(self.due_key, 0, 0, withscores=True)
            with redis_errors("read push queue"):
                found, first = await pipe.execute()
        return [_text(c) for c in found], int(first[0][1]) if first else None

    async def lease(self, channel: str, holder: str, seconds: float) -> bool:
        """Claim a channel for ``seconds`` (False: another replica has it)."""
        with redis_errors("claim push channel"):
            return bool(await self.redis.set(self._lease(channel), holder, nx=True, px=int(seconds * 1000)))

    async def release(self, channel: str) -> None:
        with redis_errors("release push channel"):
            await self.redis.delete(self._lease(channel))

    async def progress(self, task_id: str, config_id: str) -> tuple[int, Progress]:
        """The channel's cursor (last event delivered) and its failed attempts."""
        with redis_errors("read push progress"):
            sent, tries = await self.redis.hmget(
                self.configs_key(task_id), [f"{config_id}#sent", f"{config_id}#tries"]
            )
        try:
            progress = _decode_progress(tries) if tries is not None else Progress()
        except msgspec.DecodeError:
            progress = Progress()
        text = _text(sent) if sent is not None else "0"
        return (int(text) if text.isdigit() else 0), progress

    async def sent(self, task_id: str, config_id: str, seq: int) -> None:
        """Event ``seq`` is delivered (or given up on): the cursor moves past it."""
        key = self.configs_key(task_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, f"{config_id}#sent", seq)
            pipe.hdel(key, f"{config_id}#tries")
            with redis_errors("write push progress"):
                await pipe.execute()

    async def retry(self, channel: str, at_ms: int, progress: Progress) -> None:
        """The channel's next event failed: try again at ``at_ms``."""
        task_id, config_id = split_channel(channel)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self.configs_key(task_id), f"{config_id}#tries", _encode(progress))
            pipe.zadd(self.due_key, {channel: at_ms})
            with redis_errors("write push progress"):
                await pipe.execute()

    async def settle(self, channel: str) -> None:
        """Nothing is left to deliver on the channel: out of the queue."""
        with redis_errors("settle push channel"):
            await self.redis.zrem(self.due_key, channel)
