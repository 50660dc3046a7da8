"""Which sent messages the person edited before approving them.

A session records an approved draft as ``user_approved`` whether or not the person changed
it; the console remembers the turns it sent changed, so that they read ``user-edited``.
Kept in Redis next to the session (``P session:<id>:edited``, a sorted set of turn indexes,
expiring with the session's keys), so every console shows the same labels; with the commands
the generated ACL grants the users that run sessions (``a2a redis-config``).
"""

from __future__ import annotations

import redis.asyncio as aioredis

from discovery.errors import redis_errors

from ..sessions.model import Session

__all__ = ["Edits"]


class Edits:
    def __init__(self, redis: aioredis.Redis, prefix: str, ttl: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.ttl = ttl

    def _key(self, session_id: str) -> str:
        return f"{self.prefix}session:{session_id}:edited"

    async def mark(self, session_id: str, turn: int) -> None:
        """The message about to be sent as turn ``turn`` is the person's edit of the draft.

        Raises:
            Unavailable: Redis could not be reached.
        """
        with redis_errors("mark an edited message"):
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.zadd(self._key(session_id), {str(turn): turn})
                pipe.expire(self._key(session_id), self.ttl)
                await pipe.execute()

    async def unmark(self, session_id: str, turn: int) -> None:
        with redis_errors("unmark an edited message"):
            await self.redis.zrem(self._key(session_id), str(turn))

    async def of(self, session: Session) -> frozenset[int]:
        """The edited turns of ``session`` (read only when it has approved turns).

        Raises:
            Unavailable: Redis could not be reached.
        """
        if not any(t.sent_by == "user_approved" for t in session.turns):
            return frozenset()
        with redis_errors("read edited messages"):
            members = await self.redis.zrevrange(self._key(session.id), 0, -1)
        return frozenset(int(m) for m in map(_text, members) if m.isdigit())


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
