"""Conversation history in Redis: messages, sub-agent interactions, owners, objectives in progress.

Keys (``P`` = ``a2a:{<ns>}:``), all expiring ``ttl`` seconds after the last write:

    P conv:<id>:meta       hash: userId (the owner), createdAt, goal, writes (exchanges
                           written), summary and summarised (the writes it covers)
    P conv:<id>:messages   list of ChatMessage JSON, oldest first, capped at ``max_messages``
    P conv:<id>:calls      list of Interaction JSON: one per sub-agent call, no context copied
    P active:<hash>        an objective in progress (origin, target, objective) -> requestId

A delegation's thread (seed 003 ``thread_mode``) is a conversation of its own. The free
text of an interaction (task, output preview) is redacted before it is written. The
runtime appends each call it handles as an :class:`Exchange` (:mod:`a2a.stores.capture`)
and keeps the summary and goal (the first user request) beside the owner.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence

import msgspec
import redis.asyncio as aioredis

from bus.errors import PermissionDenied
from bus.handoff import ChatMessage
from bus.wire import Wire
from discovery import call_function
from discovery.errors import redis_errors
from discovery.registry import RegistryKeys

from ..delegation.redact import Redactor
from .summary import SUMMARY_WINDOW, SummaryInput, summarise

__all__ = ["Appended", "Exchange", "HistoryStore", "Interaction", "objective_key", "preview"]

PREVIEW_CHARS = 200
BATCH = 256
"""Exchanges one write sends at most (a larger batch is several round trips)."""


class Interaction(Wire):
    """One sub-agent call as the caller's conversation records it (seed 000)."""

    caller: str
    target: str
    task: str
    output_preview: str
    success: bool
    duration_ms: float
    request_id: str
    at: float
    thread_id: str | None = None
    error_code: str | None = None
    tokens_used: int = 0


class Exchange(msgspec.Struct, frozen=True, kw_only=True):
    """One call as its conversation keeps it: the request and its answer (both redacted)."""

    conversation_id: str
    user_id: str | None
    """The user the call was made for; a conversation of another user is not written."""
    request: ChatMessage
    answer: ChatMessage


class Appended(msgspec.Struct):
    """What :meth:`HistoryStore.append_exchanges` wrote: the exchanges, and for each
    conversation written to, how many exchanges were ever written to it and how many
    messages it holds (before trimming), both now."""

    written: list[Exchange] = msgspec.field(default_factory=list)
    writes: dict[str, int] = msgspec.field(default_factory=dict)
    lengths: dict[str, int] = msgspec.field(default_factory=dict)


_message_encoder = msgspec.json.Encoder()
_message_decoder = msgspec.json.Decoder(ChatMessage)
_interaction_decoder = msgspec.json.Decoder(Interaction)


def objective_key(conversation_id: str, origin: str, target: str, objective: str) -> str:
    """Identity of an objective in progress: same conversation, origin, target and objective."""
    digest = hashlib.sha256(f"{conversation_id}\0{origin}\0{target}\0{objective}".encode()).hexdigest()
    return digest[:24]


ANSWERED = "answered:"
"""Prefix of the holder of an objective answered lately (:meth:`HistoryStore.finish_objective`)."""


class HistoryStore:
    """Conversations and threads of one namespace. Methods raise ``Unavailable`` when Redis is down."""

    def __init__(
        self,
        redis: aioredis.Redis,
        namespace: str,
        *,
        max_messages: int = 1000,
        ttl: float = 7 * 24 * 3600,
        redactor: Redactor | None = None,
        objective_window: float = 0.0,
    ) -> None:
        self.redis = redis
        self.objective_window = objective_window
        """Seconds an answered objective stays held (``Settings.objective_window``)."""
        self.redactor = redactor or Redactor()
        self.prefix = RegistryKeys(namespace).prefix
        self.max_messages = max_messages
        self.ttl = int(ttl)
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._base = f"{self.prefix}conv:"

    def _key(self, conversation_id: str, part: str) -> str:
        return f"{self._base}{conversation_id}:{part}"

    async def claim(self, conversation_id: str, user_id: str) -> None:
        """Make ``user_id`` the owner of a new conversation, or check it owns an existing one.

        Raises:
            PermissionDenied: the conversation belongs to another user.
        """
        owner = self._owners.get(conversation_id)
        if owner is None:
            key = self._key(conversation_id, "meta")
            with redis_errors("claim conversation"):
                async with self.redis.pipeline(transaction=True) as pipe:
                    pipe.hsetnx(key, "userId", user_id)
                    pipe.hsetnx(key, "createdAt", str(time.time()))
                    pipe.hget(key, "userId")
                    pipe.expire(key, self.ttl)
                    _, _, owner, _ = await pipe.execute()
            self._owners[conversation_id] = owner
            if len(self._owners) > 10_000:
                self._owners.popitem(last=False)
        if owner != user_id:
            raise PermissionDenied(
                f"conversation {conversation_id} belongs to another user",
                details={"conversationId": conversation_id},
            )

    async def owner(self, conversation_id: str) -> str | None:
        with redis_errors("conversation owner"):
            value = await self.redis.hget(self._key(conversation_id, "meta"), "userId")
        return str(value) if value is not None else None

    async def append(self, conversation_id: str, *messages: ChatMessage) -> None:
        if not messages:
            return
        key = self._key(conversation_id, "messages")
        with redis_errors("append messages"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.rpush(key, *[_message_encoder.encode(m) for m in messages])
                pipe.ltrim(key, -self.max_messages, -1)
                pipe.expire(key, self.ttl)
                await pipe.execute()

    async def messages(self, conversation_id: str) -> list[ChatMessage]:
        with redis_errors("read messages"):
            raw = await self.redis.lrange(self._key(conversation_id, "messages"), 0, -1)
        return _readable(raw)

    async def set_summary(self, conversation_id: str, summary: str) -> None:
        """Keep ``summary`` as the conversation's summary, over the exchanges written so far."""
        key = self._key(conversation_id, "meta")
        with redis_errors("set summary"):
            writes = _count(await self.redis.hget(key, "writes"))
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hset(key, mapping={"summary": summary, "summarised": max(writes, 0)})
                pipe.expire(key, self.ttl)
                await pipe.execute()

    async def summary(self, conversation_id: str) -> str | None:
        """The conversation's summary: the one kept for it (a summariser's, see
        :mod:`a2a.stores.capture`, or :meth:`set_summary`'s) while it covers every exchange
        written, else the default one (:func:`~a2a.stores.summary.summarise`) of its goal and
        latest messages as they are now; None for a conversation with neither."""
        (digest,) = await self.summary_inputs([conversation_id], SUMMARY_WINDOW)
        if digest.previous is not None:
            with redis_errors("read summary"):
                summarised = _count(await self.redis.hget(self._key(conversation_id, "meta"), "summarised"))
            if summarised >= digest.writes or not digest.messages:
                return digest.previous
        return summarise(digest) if digest.messages else None

    async def append_exchanges(self, batch: Sequence[Exchange]) -> Appended:
        """Append each exchange to its conversation, in order; what was written.

        An exchange made for another user than the conversation's owner (or for none, when
        it has one) is left out. A conversation's first user request becomes its ``goal``.
        One round trip per ``BATCH`` exchanges (the library's ``history_append``).
        """
        appended = Appended()
        for start in range(0, len(batch), BATCH):
            part = batch[start : start + BATCH]
            rows = [
                (
                    x.conversation_id,
                    x.user_id or "",
                    x.request.content if x.request.role == "user" else "",
                    _message_encoder.encode(x.request).decode(),
                    _message_encoder.encode(x.answer).decode(),
                )
                for x in part
            ]
            args = [self.ttl, self.max_messages, _message_encoder.encode(rows)]
            with redis_errors("append exchanges"):
                kept, held = await call_function(self.redis, "history_append", [self._base], args)
            appended.written += (part[int(n)] for n in kept)
            for conversation, writes, length in held:
                appended.writes[_text(conversation) or ""] = int(writes)
                appended.lengths[_text(conversation) or ""] = int(length)
        return appended

    async def summary_inputs(self, conversation_ids: Sequence[str], window: int) -> list[SummaryInput]:
        """What a summariser needs of each conversation: the goal, the summary so far and
        the last ``window`` messages, in one round trip (the library's ``history_inputs``).

        All redacted, whole, here: not every message was redacted when it was written (a
        delegation's thread keeps its answers as they were), and a summary flattens and cuts
        its lines, after which a secret may no longer look like one.
        """
        args = [window, _message_encoder.encode(list(conversation_ids))]
        with redis_errors("read summary inputs"):
            replies = await call_function(self.redis, "history_inputs", [self._base], args, read_only=True)
        redact = self.redactor.redact
        return [
            SummaryInput(
                conversation_id=conversation_id,
                goal=None if (text := _text(goal)) is None else redact(text),
                messages=[
                    msgspec.structs.replace(m, content=redact(m.content)) for m in _readable(raw or ())
                ],
                previous=None if (kept := _text(previous)) is None else redact(kept),
                writes=int(writes),
            )
            for conversation_id, (goal, previous, raw, writes) in zip(conversation_ids, replies, strict=True)
        ]

    async def set_summaries(self, summaries: Sequence[tuple[str, str, int]]) -> int:
        """Write each ``(conversation, summary, writes)`` in one round trip (the library's
        ``history_summaries``), unless the conversation keeps a summary of as many writes or
        more; how many were written."""
        if not summaries:
            return 0
        args = [self.ttl, _message_encoder.encode(list(summaries))]
        with redis_errors("write summaries"):
            return int(await call_function(self.redis, "history_summaries", [self._base], args))

    async def record(self, conversation_id: str, interaction: Interaction) -> None:
        """Record one sub-agent interaction: who asked whom what, and a preview of the outcome.

        The task and the output preview are redacted (and cut to a preview again, since a
        replacement can be longer than what it replaced); ``interaction`` is not changed.
        """
        redact = self.redactor.redact
        interaction = msgspec.structs.replace(
            interaction,
            task=preview(redact(interaction.task)),
            output_preview=preview(redact(interaction.output_preview)),
        )
        key = self._key(conversation_id, "calls")
        with redis_errors("record interaction"):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.rpush(key, _message_encoder.encode(interaction))
                pipe.expire(key, self.ttl)
                await pipe.execute()

    async def interactions(self, conversation_id: str) -> list[Interaction]:
        with redis_errors("read interactions"):
            raw = await self.redis.lrange(self._key(conversation_id, "calls"), 0, -1)
        return [_interaction_decoder.decode(r) for r in raw]

    async def start_objective(self, key: str, request_id: str, ttl_ms: int) -> str | None:
        """Mark an objective in progress; returns the requestId already holding it, if any."""
        name = f"{self.prefix}active:{key}"
        with redis_errors("start objective"):
            if await self.redis.set(name, request_id, nx=True, px=max(1, ttl_ms)):
                return None
            holder = await self.redis.get(name)
        return str(holder) if holder is not None else None

    async def finish_objective(self, key: str, request_id: str, *, answered: bool = False) -> None:
        """Release an objective ``request_id`` holds; one it answered stays held as
        ``answered:<request_id>`` for ``objective_window`` seconds (asking again is a loop)."""
        name = f"{self.prefix}active:{key}"
        keep_ms = int(self.objective_window * 1000) if answered else 0
        with redis_errors("finish objective"):
            if await self.redis.get(name) == request_id:
                if keep_ms > 0:
                    await self.redis.set(name, ANSWERED + request_id, px=keep_ms, xx=True)
                else:
                    await self.redis.delete(name)


def _readable(raw: Sequence[bytes | str]) -> list[ChatMessage]:
    """The stored messages that decode (any user may write a conversation's list)."""
    messages = []
    for one in raw:
        try:
            messages.append(_message_decoder.decode(one))
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue
    return messages


def _count(value: bytes | str | None) -> int:
    """A count kept in a hash field; -1 for a missing or unreadable one."""
    try:
        return int(value) if value is not None else -1
    except ValueError:
        return -1


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` cut to ``limit`` characters. Redact before cutting: a cut secret may no longer match."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
