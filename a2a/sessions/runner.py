"""The loop of one session, run by the process that owns it (the seed's canonical flow).

Each pass reads the session from Redis, takes one step and writes the outcome back by
compare-and-set, so the person's controls (written by any process) take effect between
steps: a pause is seen before the next send, a stop before the next step. One turn is in
flight at a time. A step's outcome that arrives after a pause is kept (the draft, the
remote's reply) and the session stays paused.

While it waits for the person, or a step runs, the loop reads the session again when woken
(:meth:`SessionRunner.poke`: by each change any process publishes, see ``wakeups``, and each
renewal of its lease), and a waiting session once its ``maxDurationMs`` is reached.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from bus.errors import A2AError, AgentError, Unavailable
from bus.wire import Orchestration, ResponseEnvelope

from ..core.options import CallOptions
from ..prompt.frames import LocalPromptRequest
from ..prompt.turns import turn_seconds
from . import outcomes
from . import policy as policies
from .bounds import bounded
from .machine import interrupted, move
from .model import TERMINAL, Ending, Session
from .policy import PolicyStore
from .rules import limit_hit, review_reason, sent_by_of
from .store import AuditEntry, LeaseLost, SessionStore

if TYPE_CHECKING:
    from ..core.runtime import Runtime

__all__ = ["SessionRunner"]

log = logging.getLogger("a2a.sessions")

_MARGIN = 2.0  # seconds the local call gets beyond its turn, for the bridge to report a timeout itself


class SessionRunner:
    def __init__(
        self, rt: Runtime, store: SessionStore, policies: PolicyStore, session_id: str, owner: str
    ) -> None:
        self.rt = rt
        self.store = store
        self.policies = policies
        self.id = session_id
        self.owner = owner
        """The lease holder this loop writes as: without the lease it writes nothing."""
        self.wake = anyio.Event()

    def poke(self) -> None:
        """Wake the loop now to read its session: it changed (here or in another process), or may have."""
        self.wake.set()

    async def run(self) -> None:
        """Take steps until the session ends.

        Raises:
            LeaseLost: another process runs the session now (it adopted it).
        """
        while True:
            session = await self.store.get(self.id)
            if session.state in TERMINAL:
                return
            if session.owner != self.owner:
                raise LeaseLost(f"session {self.id} is run by {session.owner} now")
            limit = limit_hit(session)
            if limit is not None:
                await self._end(session, "stopped", limit)
                continue
            state = session.state
            if state == "idle":
                await self._update(lambda s: move(s, "planning", "started") if s.state == "idle" else s)
            elif state == "planning":
                await self._update(_plan)
            elif state == "waiting_local":
                await self._ask_local(session)
            elif state == "ready_to_send" and session.review is None and session.draft is not None:
                await self._send(session)
            elif state in ("waiting_remote", "processing_remote"):
                await self._update(interrupted)
            else:  # paused, or a draft waiting for the person: until a change, or the run's time is up
                await self._wait(_within(session, math.inf))

    async def _wait(self, seconds: float = math.inf) -> None:
        """Until :meth:`poke` (at once if it came since the last wait), or ``seconds``."""
        with anyio.move_on_after(seconds):
            await self.wake.wait()
        self.wake = anyio.Event()

    async def _update(self, change: Callable[[Session], Session]) -> Session:
        return await self.store.update(self.id, change, owner=self.owner)

    async def _end(self, session: Session, state: Any, ending: Ending) -> None:
        def change(s: Session) -> Session:
            return s if s.state in TERMINAL else move(s, state, ending.message, ending=ending)

        s = await self._update(change)
        await self._audit(s, "ended", state, failure=ending.message if state == "error" else None)

    async def _ask_local(self, session: Session) -> None:
        remote_message, history, summary = bounded(session.turns, session.constraints)
        frame: dict[str, Any] = {
            "profile_id": session.profile_id,
            "session_id": session.id,
            "turn_index": session.sent,
            "mode": session.mode,
            "objective": session.objective,
            "remote_message": remote_message,
            "history": msgspec.to_builtins(history),
            "constraints": _present(msgspec.to_builtins(session.constraints)),
        }
        if summary is not None:
            frame["history_summary"] = summary
        msgspec.convert({**frame, "request_id": "check"}, LocalPromptRequest)  # the frame is ours: valid
        start = time.monotonic()
        tokens = 0
        try:
            response = await self._unless_stopped(
                self.rt.request,
                session.profile_id,
                "prompt",
                frame,
                timeout=_within(session, turn_seconds(session.constraints) + _MARGIN),
                user_id=session.user_id,
                conversation_id=session.id,
            )
            if response is None:
                return  # stopped meanwhile: the call was withdrawn
            tokens = response.payload.usage.total if response.payload.usage is not None else 0
            draft, metrics = _draft_of(response.payload.result, session)
        except A2AError as exc:
            error, failed = exc, self._redact(exc.message)
            s = await self._update(lambda s: outcomes.local_failed(s, error, failed, tokens))
            await self._audit(s, "local_draft", "error", failure=f"{error.code}: {failed}")
            return
        elapsed = int((time.monotonic() - start) * 1000)
        redacted = self._redact(draft)  # kept and sent redacted; a hit asks for review in semi_auto
        review = review_reason(session, draft, metrics, redacted)
        s = await self._update(lambda s: outcomes.draft_received(s, redacted, review, tokens, elapsed))
        await self._audit(s, "local_draft", "ok", duration_ms=elapsed)

    async def _send(self, session: Session) -> None:
        draft = session.draft
        assert draft is not None
        sent_by = sent_by_of(session)
        s = await self._update(lambda s: outcomes.sending(s, draft, sent_by))
        if s.state != "waiting_remote":
            return
        control = Orchestration(
            origin_agent_device_id=s.profile_id,
            trace_id=s.trace_id,
            hop_count=1,
            orchestrator_profile_id=s.profile_id,
        )
        t0 = time.monotonic()
        try:
            policy = await self.policies.get(s.user_id, s.profile_id)
            policies.check(policy, control, s.remote)
            async with self.policies.admit(policy, s.user_id, s.profile_id, s.remote):
                # A pause or stop acknowledged while the checks ran still holds the message back.
                now = await self.store.get(self.id)
                if now.state != "waiting_remote":
                    await self._update(lambda s: outcomes.withdrawn(s, draft))
                    return
                options = CallOptions(
                    timeout=_within(s, self.rt.settings.default_timeout),
                    user_id=s.user_id,
                    conversation_id=s.id,
                    max_hops=policy.max_hop_count,
                    orchestration=control,
                    budget=_budget_left(s),
                )
                response = await self._unless_stopped(
                    self.rt.request, s.remote, s.remote_action, {"text": draft}, options
                )
            if response is None:
                return  # stopped meanwhile: the call was withdrawn
        except A2AError as exc:
            error, failed = exc, self._redact(exc.message)
            s = await self._update(lambda s: outcomes.remote_failed(s, error, failed, draft))
            await self._audit(s, "remote_send", "error", failure=f"{error.code}: {failed}", control=control)
            if s.state == "ready_to_send":
                await anyio.sleep(min(5.0, 0.5 * max(1, s.failures)))  # back off before sending again
            return
        elapsed = int((time.monotonic() - t0) * 1000)
        result = response.payload.result
        text = self._redact(result if isinstance(result, str) else msgspec.json.encode(result).decode())
        tokens = response.payload.usage.total if response.payload.usage is not None else 0
        turn_index = s.sent - 1
        s = await self._update(lambda s: outcomes.reply_received(s, text, tokens, elapsed))
        await self._audit(
            s, "remote_reply", "ok", duration_ms=elapsed, turn_index=turn_index, control=control
        )

    async def _unless_stopped(
        self, request: Callable[..., Awaitable[ResponseEnvelope]], *args: Any, **kwargs: Any
    ) -> ResponseEnvelope | None:
        """The step's call, withdrawn (None) if the session is stopped meanwhile, from any
        process, or adopted by another process (this loop lost its lease)."""
        response: ResponseEnvelope | None = None
        failed: A2AError | None = None
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while True:
                    await self._wait()  # until woken: the session changed, or may have
                    try:
                        now = await self.store.get(self.id)
                        stopped = now.state in TERMINAL or now.owner != self.owner
                    except Unavailable:  # a blip of Redis is no reason to give up the call
                        continue
                    if stopped:
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            try:
                response = await request(*args, **kwargs)
            except A2AError as exc:  # raised here, not as a group of the task group's
                failed = exc
            tg.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return response

    def _redact(self, text: str) -> str:
        return self.rt.redactor.redact(text)

    async def _audit(
        self,
        s: Session,
        event: str,
        status: str,
        *,
        duration_ms: int = 0,
        failure: str | None = None,
        turn_index: int | None = None,
        control: Orchestration | None = None,
    ) -> None:
        entry = AuditEntry(
            at=time.time(),
            session_id=s.id,
            profile_id=s.profile_id,
            target=s.remote,
            user_id=s.user_id,
            turn_index=s.sent if turn_index is None else turn_index,
            mode=s.mode,
            event=event,
            status=status,
            duration_ms=duration_ms,
            failure_reason=None if failure is None else self._redact(failure),
            trace_id=s.trace_id,
            hop_count=0 if control is None else control.hop_count,
        )
        try:
            await self.store.audit(entry)
        except Unavailable as exc:
            log.warning("session %s: audit entry lost: %s", s.id, exc)


def _plan(s: Session) -> Session:
    if s.state != "planning":
        return s
    if s.takeover:
        review = "take over: write the next message"
        return move(s, "ready_to_send", "the person writes", draft=None, review=review)
    return move(s, "waiting_local", "asking the local agent", in_flight="local")


def _budget_left(s: Session) -> int | None:
    budget = s.limits.max_tokens_budget
    return None if budget is None else max(1, budget - s.tokens_used)


def _within(s: Session, timeout: float) -> float:
    """``timeout``, or less: what is left of the run's ``maxDurationMs``."""
    left = s.started_at + s.limits.max_duration_ms / 1000 - time.time()
    return max(0.001, min(timeout, left))


def _draft_of(result: object, session: Session) -> tuple[str, dict[str, Any]]:
    """The draft and metrics of a ``prompt`` result.

    Raises:
        AgentError: the result is not ``{"draft_message": str, ...}``, or breaks the
            turn's constraints (a failed turn).
    """
    if not isinstance(result, dict) or not isinstance(result.get("draft_message"), str):
        raise AgentError("the local agent's answer has no draft_message string")
    draft: str = result["draft_message"]
    metrics = result.get("metrics") if isinstance(result.get("metrics"), dict) else {}
    assert isinstance(metrics, dict)
    c = session.constraints
    rounds = metrics.get("tool_rounds")
    if isinstance(rounds, int) and rounds > c.max_tool_rounds:
        raise AgentError(f"the local agent used {rounds} tool rounds (max_tool_rounds {c.max_tool_rounds})")
    if len(draft) > c.max_output_chars:
        raise AgentError(f"the draft has {len(draft)} characters (max_output_chars {c.max_output_chars})")
    return draft, metrics


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}
