"""The loop of one session, run by the process that owns it (the seed's canonical flow).

Each pass reads the session from Redis, takes one step and writes the outcome back by
compare-and-set, so the person's controls (written by any process) take effect between
steps: a pause is seen before the next send, a stop before the next step. One turn is in
flight at a time. A step's outcome that arrives after a pause is kept (the draft, the
remote's reply) and the session stays paused.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from bus.errors import (
    A2AError,
    AgentError,
    AgentLost,
    DeadlineExceeded,
    LimitExceeded,
    NoResponders,
    PermissionDenied,
    Unavailable,
)
from bus.wire import Orchestration

from ..stdio.config import StdioConfig, turn_timeout
from ..stdio.frames import LocalPromptRequest
from . import policy as policies
from .bounds import bounded
from .machine import interrupted, move
from .model import TERMINAL, Ending, SentBy, Session, Turn
from .policy import PolicyStore
from .rules import review_reason, sent_by_of
from .store import AuditEntry, SessionStore

if TYPE_CHECKING:
    from ..core.runtime import Runtime

__all__ = ["SessionRunner"]

log = logging.getLogger("a2a.sessions")

LOCAL_TURN = StdioConfig()
"""The seed's turn timeouts (60 s, 120 s with tool use), lowered by ``local_turn_timeout_ms``."""
_MARGIN = 2.0  # seconds the local call gets beyond its turn, for the bridge to report a timeout itself
POLL = 0.2  # seconds between reads while the session waits for the person
_FATAL = (Unavailable, NoResponders, AgentLost)
"""A local agent that cannot be reached: the seed ends the run in ``error`` (user action needed)."""


class SessionRunner:
    def __init__(self, rt: Runtime, store: SessionStore, policies: PolicyStore, session_id: str) -> None:
        self.rt = rt
        self.store = store
        self.policies = policies
        self.id = session_id
        self.wake = anyio.Event()

    def poke(self) -> None:
        """Wake the loop now (a control applied in this process)."""
        self.wake.set()

    async def run(self) -> None:
        while True:
            session = await self.store.get(self.id)
            if session.state in TERMINAL:
                return
            limit = self._limit_hit(session)
            if limit is not None:
                await self._end(session, "stopped", limit)
                continue
            state = session.state
            if state == "idle":
                await self._update(lambda s: move(s, "planning", "started") if s.state == "idle" else s)
            elif state == "planning":
                await self._plan(session)
            elif state == "waiting_local":
                await self._ask_local(session)
            elif state == "ready_to_send" and session.review is None and session.draft is not None:
                await self._send(session)
            elif state in ("waiting_remote", "processing_remote"):
                await self._update(interrupted)
            else:  # paused, or a draft waiting for the person
                await self._wait()

    async def _wait(self) -> None:
        with anyio.move_on_after(POLL):
            await self.wake.wait()
        self.wake = anyio.Event()

    async def _update(self, change: Any) -> Session:
        return await self.store.update(self.id, change)

    def _limit_hit(self, s: Session) -> Ending | None:
        lim = s.limits
        if (time.time() - s.started_at) * 1000 > lim.max_duration_ms:
            return Ending(
                kind="limit", limit="maxDurationMs", message=f"the run reached {lim.max_duration_ms} ms"
            )
        if lim.max_tokens_budget is not None and s.tokens_used >= lim.max_tokens_budget:
            return Ending(
                kind="limit",
                limit="maxTokensBudget",
                message=f"the run used {s.tokens_used} tokens of {lim.max_tokens_budget}",
            )
        if s.state == "planning" and s.sent >= lim.max_turns:
            return Ending(
                kind="limit", limit="maxTurns", message=f"{s.sent} messages sent: maxTurns is {lim.max_turns}"
            )
        return None

    async def _end(self, session: Session, state: Any, ending: Ending) -> None:
        def change(s: Session) -> Session:
            return s if s.state in TERMINAL else move(s, state, ending.message, ending=ending)

        s = await self._update(change)
        await self._audit(s, "ended", state, failure=ending.message if state == "error" else None)

    async def _plan(self, session: Session) -> None:
        def change(s: Session) -> Session:
            if s.state != "planning":
                return s
            if s.takeover:
                return move(
                    s,
                    "ready_to_send",
                    "the person writes",
                    draft=None,
                    review="take over: write the next message",
                )
            return move(s, "waiting_local", "asking the local agent")

        await self._update(change)

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
            "constraints": {
                k: v for k, v in msgspec.to_builtins(session.constraints).items() if v is not None
            },
        }
        if summary is not None:
            frame["history_summary"] = summary
        msgspec.convert({**frame, "request_id": "check"}, LocalPromptRequest)  # the frame is ours: valid
        start = time.monotonic()
        try:
            response = await self.rt.request(
                session.profile_id,
                "prompt",
                frame,
                timeout=turn_timeout(session.constraints, LOCAL_TURN) + _MARGIN,
                user_id=session.user_id,
                conversation_id=session.id,
            )
        except A2AError as exc:
            await self._local_failed(exc)
            return
        result = response.payload.result if isinstance(response.payload.result, dict) else {}
        tokens = response.payload.usage.total if response.payload.usage is not None else 0
        draft = str(result.get("draft_message", ""))
        metrics = result.get("metrics") if isinstance(result.get("metrics"), dict) else {}
        assert isinstance(metrics, dict)
        c = session.constraints
        rounds = metrics.get("tool_rounds")
        if isinstance(rounds, int) and rounds > c.max_tool_rounds:
            await self._local_failed(
                AgentError(
                    f"the local agent used {rounds} tool rounds (max_tool_rounds {c.max_tool_rounds})"
                ),
                tokens,
            )
            return
        if len(draft) > c.max_output_chars:
            await self._local_failed(
                AgentError(f"the draft has {len(draft)} characters (max_output_chars {c.max_output_chars})"),
                tokens,
            )
            return
        elapsed = int((time.monotonic() - start) * 1000)
        redacted = self.rt.redactor.redact(draft)

        def change(s: Session) -> Session:
            if s.state not in ("waiting_local", "paused"):
                return s
            used = s.tokens_used + tokens
            if not draft.strip():
                if s.state == "paused":
                    return s
                done = Ending(kind="done", message="the local agent has nothing more to send")
                return move(
                    s, "completed", "the local agent is done", ending=done, tokens_used=used, failures=0
                )
            review = review_reason(s, draft, metrics, redacted)
            if s.state == "paused":
                return msgspec.structs.replace(s, draft=draft, review=review, tokens_used=used, failures=0)
            return move(
                s,
                "ready_to_send",
                f"draft in {elapsed} ms",
                draft=draft,
                review=review,
                tokens_used=used,
                failures=0,
            )

        s = await self._update(change)
        await self._audit(s, "local_draft", "ok", duration_ms=elapsed)

    async def _local_failed(self, exc: A2AError, tokens: int = 0) -> None:
        message = self.rt.redactor.redact(exc.message)
        fatal = isinstance(exc, _FATAL)

        def change(s: Session) -> Session:
            if s.state not in ("waiting_local", "paused"):
                return s
            failures = s.failures + 1
            fields = {
                "failures": failures,
                "last_error": f"{exc.code}: {message}",
                "tokens_used": s.tokens_used + tokens,
            }
            if fatal or failures >= s.limits.max_failures:
                ending = (
                    Ending(
                        kind="failure", message=f"the local agent cannot be reached: {exc.code}: {message}"
                    )
                    if fatal
                    else Ending(
                        kind="limit",
                        limit="maxFailures",
                        message=f"{_failed(failures)}: {exc.code}: {message}",
                    )
                )
                return move(s, "error", ending.message, ending=ending, **fields)
            if s.state == "paused":
                return msgspec.structs.replace(s, **fields)
            return move(s, "planning", f"local turn failed: {exc.code}", **fields)

        s = await self._update(change)
        await self._audit(s, "local_draft", "error", failure=f"{exc.code}: {message}")

    async def _send(self, session: Session) -> None:
        draft = session.draft
        assert draft is not None
        sent_by: SentBy = sent_by_of(session)
        control = Orchestration(
            origin_agent_device_id=session.profile_id,
            trace_id=session.trace_id,
            hop_count=1,
            orchestrator_profile_id=session.profile_id,
        )
        turn_index = session.sent

        def start(s: Session) -> Session:
            if s.state != "ready_to_send" or s.draft != draft or s.review is not None:
                return s
            turn = Turn(
                index=len(s.turns),
                role="user" if sent_by == "user_written" else "local_agent",
                text=draft,
                at=time.time(),
                sent_by=sent_by,
            )
            return move(
                s, "waiting_remote", f"sending ({sent_by})", turns=[*s.turns, turn], draft=None, draft_by=None
            )

        s = await self._update(start)
        if s.state != "waiting_remote":
            return
        t0 = time.monotonic()
        try:
            policy = await self.policies.get(s.user_id, s.profile_id)
            policies.check(policy, control, s.remote)
            async with self.policies.admit(policy, s.profile_id, s.remote):
                response = await self.rt.request(
                    s.remote,
                    s.remote_action,
                    {"text": draft},
                    user_id=s.user_id,
                    conversation_id=s.id,
                    max_hops=policy.max_hop_count,
                    orchestration=control,
                    budget=None
                    if s.limits.max_tokens_budget is None
                    else max(1, s.limits.max_tokens_budget - s.tokens_used),
                )
        except A2AError as exc:
            await self._remote_failed(exc, draft)
            return
        elapsed = int((time.monotonic() - t0) * 1000)
        result = response.payload.result
        text = result if isinstance(result, str) else msgspec.json.encode(result).decode()
        tokens = response.payload.usage.total if response.payload.usage is not None else 0

        def received(s: Session) -> Session:
            if s.state not in ("waiting_remote", "paused"):
                return s
            turn = Turn(
                index=len(s.turns),
                role="remote_agent",
                text=text,
                at=time.time(),
                tokens=tokens,
                duration_ms=elapsed,
            )
            fields = {"turns": [*s.turns, turn], "tokens_used": s.tokens_used + tokens, "failures": 0}
            if s.state == "paused":
                return msgspec.structs.replace(s, **fields)
            return move(
                move(s, "processing_remote", f"reply in {elapsed} ms", **fields), "planning", "next turn"
            )

        s = await self._update(received)
        await self._audit(
            s, "remote_reply", "ok", duration_ms=elapsed, turn_index=turn_index, control=control
        )

    async def _remote_failed(self, exc: A2AError, draft: str) -> None:
        message = self.rt.redactor.redact(exc.message)
        refused = isinstance(exc, PermissionDenied | LimitExceeded) and not isinstance(exc, DeadlineExceeded)

        def change(s: Session) -> Session:
            if s.state not in ("waiting_remote", "paused"):
                return s
            failures = s.failures + 1
            turns = s.turns[:-1] if s.turns and s.turns[-1].text == draft else s.turns  # not delivered
            fields = {"failures": failures, "last_error": f"{exc.code}: {message}", "turns": turns}
            if refused:
                ending = Ending(kind="policy", message=f"refused: {exc.code}: {message}")
                return move(s, "error", ending.message, ending=ending, **fields)
            if failures >= s.limits.max_failures:
                ending = Ending(
                    kind="limit", limit="maxFailures", message=f"{_failed(failures)}: {exc.code}: {message}"
                )
                return move(s, "error", ending.message, ending=ending, **fields)
            if s.state == "paused":
                return msgspec.structs.replace(s, draft=draft, **fields)
            return move(s, "ready_to_send", f"send failed: {exc.code}", draft=draft, **fields)

        s = await self._update(change)
        await self._audit(
            s, "remote_send", "refused" if refused else "error", failure=f"{exc.code}: {message}"
        )
        if s.state == "ready_to_send":
            await anyio.sleep(min(5.0, 0.5 * s.failures))  # back off before sending again

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
            failure_reason=None if failure is None else self.rt.redactor.redact(failure),
            trace_id=s.trace_id,
            hop_count=0 if control is None else control.hop_count,
        )
        try:
            await self.store.audit(entry)
        except Unavailable as exc:
            log.warning("session %s: audit entry lost: %s", s.id, exc)


def _failed(n: int) -> str:
    return f"{n} failed turn{'s' if n != 1 else ''} in a row"


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}
