"""Facts about a user that delegated agents learn (seed 002's ``new_facts``), kept per user.

A delegation's response may carry ``new_facts``; the caller keeps them for the call's user
and hands the latest back in ``handoff_data.facts`` of that user's later delegations (when
the step gives none of its own), and :meth:`a2a.Runtime.facts` returns them.

Key (``P`` = ``a2a:{<ns>}:``), in the history's key family (the same server rights), expiring
``ttl`` seconds after the last write::

    P conv:user-<digest of the user id>:facts   list of facts, newest last (repeats folded when read)

Each fact is redacted and cut to ``FACT_CHARS`` before it is written; a fact already kept
is read once, as its newest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import redis.asyncio as aioredis

from discovery.errors import redis_errors
from discovery.registry import RegistryKeys

from ..delegation.redact import Redactor

__all__ = ["FACT_CHARS", "FactStore"]

FACT_CHARS = 300
"""A fact is cut to this many characters."""


class FactStore:
    """The facts of each user of one namespace. Methods raise ``Unavailable`` when Redis is down."""

    def __init__(
        self,
        redis: aioredis.Redis,
        namespace: str,
        *,
        redactor: Redactor | None = None,
        max_facts: int = 50,
        ttl: float = 30 * 24 * 3600,
    ) -> None:
        self.redis = redis
        self.redactor = redactor or Redactor()
        self.prefix = RegistryKeys(namespace).prefix
        self.max_facts = max_facts
        self.ttl = int(ttl)

    def _key(self, user_id: str) -> str:
        digest = hashlib.sha256(("u=" + user_id).encode()).hexdigest()[:32]
        return f"{self.prefix}conv:user-{digest}:facts"

    async def add(self, user_id: str, facts: Sequence[str]) -> None:
        """Keep ``facts``, redacted and cut (a fact kept already counts once, as its newest)."""
        kept = []
        for fact in facts:
            text = self.redactor.redact(fact.strip())[:FACT_CHARS]
            if text and text not in kept:
                kept.append(text)
        if not kept:
            return
        key = self._key(user_id)
        with redis_errors("keep facts"):
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.rpush(key, *kept)
                pipe.ltrim(key, -2 * self.max_facts, -1)  # room for repeats, folded when read
                pipe.expire(key, self.ttl)
                await pipe.execute()

    async def facts(self, user_id: str, limit: int | None = None) -> list[str]:
        """The user's facts, newest first, each once (``limit`` at most)."""
        limit = self.max_facts if limit is None else min(limit, self.max_facts)
        if limit <= 0:
            return []
        with redis_errors("read facts"):
            raw = await self.redis.lrange(self._key(user_id), -2 * self.max_facts, -1)
        newest = dict.fromkeys(r.decode() if isinstance(r, bytes) else str(r) for r in reversed(raw))
        return list(newest)[:limit]
