"""Conversation history captured by the runtime: every call an agent handles, and a summary.

The callee records each request it handled and its answer (:meth:`HistoryRecorder.capture`,
called where the audit record is made, for calls and durable tasks alike): one place
that every call reaches once, whoever made it (a script, the A2A gateway, a session, another
agent, in this process or not). Delegated requests are left out: their thread is written
by the delegation itself (:func:`a2a.core.delegating.finish_delegation`).

Capturing never makes a call wait or fail. :meth:`~HistoryRecorder.capture` only queues
(no await, no I/O); :meth:`~HistoryRecorder.run`, in the runtime's task group, redacts and
writes what is queued as soon as it is, one batch per round trip; with a summariser given
to the runtime it then brings each written conversation's summary up to date, in a loop of
its own so a slow summariser (a model) never holds the writes back (without one, the default
summary is made when it is read: nothing to write per call); cancelled (the runtime
closing, its hosts stopped), it writes what is left for a few seconds at most. What cannot
be written (the store is down, the queue is full) is dropped, counted and logged at a
bounded rate.

Messages: a request from outside any agent is a ``user`` message, one from an agent an
``agent`` message, each named after its sender; the answer (the result, or ``[CODE]
message`` for an error) is an ``assistant`` message named after the agent that gave it.
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import Any

import anyio
import msgspec

from bus.errors import A2AError, outcome_of
from bus.handoff import ChatMessage
from bus.wire import NotificationEnvelope, RequestEnvelope

from ..delegation.redact import Redactor
from .history import Appended, Exchange, HistoryStore, preview
from .summary import SUMMARY_CHARS, SUMMARY_WINDOW, Summariser, SummaryInput, summarise

__all__ = [
    "MESSAGE_CHARS",
    "TEXT_KEYS",
    "CaptureStats",
    "HistoryRecorder",
    "Summariser",
    "answer_text",
    "request_text",
]

log = logging.getLogger("a2a.history")

MESSAGE_CHARS = 2000
"""Longest message text kept; longer ones are cut (after redaction)."""
TEXT_KEYS = ("text", "message", "prompt", "query", "question", "input", "task", "remote_message")
"""Parameters whose string value is the request's text; without one, the parameters are (as JSON)."""
SUMMARY_BATCH = 64
"""Conversations whose summaries are read and written in one round trip each."""
MAX_PENDING = 10_000
"""Captured calls waiting to be written at most; more are dropped (and counted)."""
LOG_EVERY = 30.0
"""Seconds between two warnings about failed writes (the failures are counted meanwhile)."""
FLUSH_WAIT = 5.0
"""Seconds the recorder keeps writing what is left once cancelled."""
BATCH_WAIT = 0.02
"""Seconds the writer lets calls gather after the first one is queued: under load one
round trip then writes hundreds of calls, instead of the writer's Redis client taking the
CPU from the calls, one small batch after another."""

_json = msgspec.json.Encoder()


def request_text(env: RequestEnvelope, redactor: Redactor, limit: int = MESSAGE_CHARS) -> str:
    """A request as a message's text: its text parameter, else its action and parameters (redacted)."""
    action, params = env.payload.action, env.payload.parameters
    if params:
        for key in TEXT_KEYS:
            value = params.get(key)
            if isinstance(value, str) and value:
                return preview(redactor.redact(value), limit)
        return preview(f"{redactor.redact(action)} {redacted_json(params, redactor)}", limit)
    return preview(redactor.redact(action), limit)


def answer_text(result: Any, error: A2AError | None, redactor: Redactor, limit: int = MESSAGE_CHARS) -> str:
    """An answer as a message's text: the result (JSON unless a string), or ``[CODE] message``."""
    if error is not None:
        return preview(redactor.redact(f"[{error.code}] {error.message}"), limit)
    if isinstance(result, str):
        return preview(redactor.redact(result), limit)
    return preview(redacted_json(result, redactor), limit)


def redacted_json(value: Any, redactor: Redactor) -> str:
    """``value`` as JSON, redacted twice: each string as it is (and a value under a secret
    key name), then the whole text, which holds what the strings alone do not (a name and
    its value together, numbers such as card numbers, keys)."""
    try:
        encoded = _json.encode(redactor.redact_value(value)).decode()
    except (TypeError, ValueError):
        return type(value).__name__
    return redactor.redact(encoded)


def _digest(conversation_id: str, exchanges: list[Exchange]) -> SummaryInput:
    """What a summariser needs of a conversation that holds only ``exchanges``."""
    goal = next((x.request.content for x in exchanges if x.request.role == "user"), None)
    messages = [m for x in exchanges for m in (x.request, x.answer)][-SUMMARY_WINDOW:]
    return SummaryInput(conversation_id=conversation_id, goal=goal, messages=messages, writes=len(exchanges))


class CaptureStats(msgspec.Struct, kw_only=True):
    captured: int = 0
    """Calls queued to be written."""
    written: int = 0
    """Calls written (two messages each)."""
    skipped: int = 0
    """Calls not written because their conversation belongs to another user."""
    dropped: int = 0
    """Calls lost: the queue was full or the store failed."""
    failures: int = 0
    """Failed writes (each may have dropped many calls)."""
    summaries: int = 0
    summary_failures: int = 0


class HistoryRecorder:
    """Writes captured calls to the history store and keeps each conversation's summary.

    Args:
        history: where to write; None (no Redis) records nothing, as ``enabled=False`` does.
        summariser: writes a summary from a :class:`~a2a.stores.summary.SummaryInput`; may
            be async. Without one, nothing is written: a reader of a summary gets the
            default one (:func:`~a2a.stores.summary.summarise`) of the conversation as it is
            (:meth:`~a2a.stores.history.HistoryStore.summary`).
        summary_timeout: seconds a summariser may take for one conversation.
    """

    def __init__(
        self,
        history: HistoryStore | None,
        redactor: Redactor,
        summariser: Summariser | None = None,
        *,
        enabled: bool = True,
        summary_timeout: float = 30.0,
        max_pending: int = MAX_PENDING,
        batch_wait: float = BATCH_WAIT,
    ) -> None:
        self.history = history
        self.enabled = enabled and history is not None
        self.redactor = redactor
        self.summariser = summariser if summariser is not summarise else None
        self.summary_timeout = summary_timeout
        self.max_pending = max_pending
        self.batch_wait = batch_wait
        self.stats = CaptureStats()
        self._pending: list[tuple[RequestEnvelope, str, Any, A2AError | None, float]] = []
        self._queued = anyio.Event()
        # Conversations whose summary is behind, in order, with what their summariser needs
        # when this process knows it all (None: read it).
        self._dirty: dict[str, SummaryInput | None] = {}
        self._stale = anyio.Event()
        self._writing = anyio.Lock()
        self._warned = -LOG_EVERY
        self._unlogged = 0

    def capture(
        self, env: RequestEnvelope | NotificationEnvelope, agent: str, result: Any, error: A2AError | None
    ) -> None:
        """Queue a handled request and its answer; returns at once (the callee's hot path).

        Notifications (no answer, many receivers), delegated requests (their thread is
        written by the delegation) and requests the callee's checks refused (they never
        joined the conversation) are not recorded.
        """
        if not self.enabled or type(env) is not RequestEnvelope or env.delegation is not None:
            return
        if error is not None and outcome_of(error) == "refused":
            return
        if len(self._pending) >= self.max_pending:
            self.stats.dropped += 1
            self._warn("history capture queue full: a call was not recorded")
            return
        self._pending.append((env, agent, result, error, time.time()))
        self.stats.captured += 1
        self._queued.set()

    async def run(self) -> None:
        """Write what is captured, and keep summaries up to date, until cancelled; then
        write what is left (``FLUSH_WAIT`` seconds at most)."""
        if not self.enabled:
            return
        try:
            async with anyio.create_task_group() as tg:
                if self.summariser is not None:
                    tg.start_soon(self._summarising)
                while True:
                    await self._queued.wait()
                    await anyio.sleep(self.batch_wait)
                    self._queued = anyio.Event()
                    await self._write()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(FLUSH_WAIT):
                await self.flush()

    async def flush(self) -> None:
        """Write what is queued and bring the summaries it touched up to date."""
        await self._write()
        await self._summarise_dirty()

    async def _write(self) -> None:
        async with self._writing:  # one batch at a time, so a flush waits for the one in flight
            pending, self._pending = self._pending, []
            if not pending:
                return
            batch = [self._exchange(*entry) for entry in pending]
            try:
                assert self.history is not None  # something was captured: enabled
                appended = await self.history.append_exchanges(batch)
            except Exception as exc:  # the store is down or refused: best effort, counted
                self.stats.failures += 1
                self.stats.dropped += len(batch)
                self._warn(f"{len(batch)} calls not recorded in the conversation history: {exc}")
                return
            written = appended.written
            if -1 in appended.writes.values():
                self._warn(
                    "a conversation's count of writes could not be kept (a Redis user without"
                    " HINCRBY? regenerate the ACL with `a2a redis-config`): its summaries may stay old"
                )
            self.stats.written += len(written)
            self.stats.skipped += len(batch) - len(written)
            if written and self.summariser is not None:
                self._mark_dirty(appended)

    def _mark_dirty(self, appended: Appended) -> None:
        """The conversations written to need a new summary; a conversation holding only the
        messages just written is summarised without reading it."""
        by_conversation: dict[str, list[Exchange]] = {}
        for exchange in appended.written:
            by_conversation.setdefault(exchange.conversation_id, []).append(exchange)
        for conversation_id, exchanges in by_conversation.items():
            writes = appended.writes.get(conversation_id)
            new = writes == len(exchanges) and appended.lengths.get(conversation_id) == 2 * writes
            self._dirty[conversation_id] = _digest(conversation_id, exchanges) if new else None
        self._stale.set()

    def _exchange(
        self, env: RequestEnvelope, agent: str, result: Any, error: A2AError | None, at: float
    ) -> Exchange:
        redactor = self.redactor
        sender = env.source_agent_id
        asked = min(at, env.metadata.timestamp / 1000)
        role = "user" if env.metadata.depth == 0 else "agent"
        return Exchange(
            conversation_id=env.conversation_id,
            user_id=env.user_id,
            request=ChatMessage(
                role=role, content=request_text(env, redactor), name=sender, created_at=asked
            ),
            answer=ChatMessage(
                role="assistant", content=answer_text(result, error, redactor), name=agent, created_at=at
            ),
        )

    async def _summarising(self) -> None:
        while True:
            await self._stale.wait()
            self._stale = anyio.Event()
            await self._summarise_dirty()

    async def _summarise_dirty(self) -> None:
        dirty, self._dirty = self._dirty, {}
        known = [digest for digest in dirty.values() if digest is not None]
        unread = [conversation_id for conversation_id, digest in dirty.items() if digest is None]
        for start in range(0, len(known), SUMMARY_BATCH):
            await self._summarise(known[start : start + SUMMARY_BATCH])
        for start in range(0, len(unread), SUMMARY_BATCH):
            ids = unread[start : start + SUMMARY_BATCH]
            assert self.history is not None  # something was written: enabled
            try:
                digests = await self.history.summary_inputs(ids, SUMMARY_WINDOW)
            except Exception as exc:
                self.stats.summary_failures += len(ids)
                self._warn(f"summaries of {len(ids)} conversations not updated: {exc!r}")
                continue
            await self._summarise(digests)

    async def _summarise(self, digests: list[SummaryInput]) -> None:
        """Bring these conversations' summaries up to date, written in one round trip; a
        summariser's failure keeps that conversation's old summary, the store's keeps them all."""
        assert self.history is not None and self.summariser is not None  # something was written
        summaries: list[tuple[str, str, int]] = []
        for digest in digests:
            try:
                text = self.summariser(digest)
                if inspect.isawaitable(text):  # a model, say: it has summary_timeout
                    with anyio.fail_after(self.summary_timeout):
                        text = await text
            except Exception as exc:  # the summariser's failure: the old summary stays
                self.stats.summary_failures += 1
                self._warn(f"summary of conversation {digest.conversation_id} not updated: {exc!r}")
                continue
            text = self.redactor.redact(str(text))
            summaries.append((digest.conversation_id, preview(text, SUMMARY_CHARS), digest.writes))
        try:
            self.stats.summaries += await self.history.set_summaries(summaries)
        except Exception as exc:
            self.stats.summary_failures += len(summaries)
            self._warn(f"summaries of {len(summaries)} conversations not written: {exc!r}")

    def _warn(self, message: str) -> None:
        """Log a warning at most every LOG_EVERY seconds, saying how many went unlogged."""
        now = time.monotonic()
        if now - self._warned < LOG_EVERY:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more since the last warning)" if self._unlogged else ""
        self._warned, self._unlogged = now, 0
        log.warning("%s%s", message, more)
