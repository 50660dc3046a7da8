"""Hosting one agent instance: subscriptions, admission, bounded concurrent handlers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from bus import ACK_HEADER, ALIVE_HEADER, PROBE_HEADER, codec
from bus.errors import (
    A2AError,
    AgentError,
    Cancelled,
    CycleDetected,
    DeadlineExceeded,
    InvalidEnvelope,
    Overloaded,
    PayloadTooLarge,
    UnknownAction,
)
from bus.handoff import ChatMessage, DelegationResult
from bus.ids import new_id
from bus.limits import (
    check_budget,
    check_cycle,
    check_depth,
    check_fan_out,
    check_hops,
    local_deadline,
)
from bus.wire import (
    PROTOCOL_VERSION,
    Envelope,
    ErrorEnvelope,
    Metadata,
    NotificationEnvelope,
    Payload,
    RequestEnvelope,
    ResponseEnvelope,
)
from discovery.profile import AgentProfile, AgentStatus
from discovery.registry import InstanceState
from transports import Message, Subscription, TransportError

from ._slots import Slots
from .agent import Action, Agent
from .audit import AuditRecord, outcome_of
from .context import Context
from .delegation import as_delegation_result
from .history import objective_key

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["AgentHost", "HostStats"]

log = logging.getLogger("a2a.host")


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class HostStats:
    handled: int = 0
    failed: int = 0
    refused: int = 0
    overloaded: int = 0
    invalid: int = 0
    cancelled: int = 0
    repeated: int = 0
    """Calls received again (after a reconnect) and answered from the reply cache."""


WITHDRAWN = "withdrawn"
SHUTDOWN = "shutdown"


# Calls still in hand after this long are acknowledged to their callers, who then
# probe this instance while they wait (see bus.Bus.watch).
ACK_AFTER = 0.2
# Replies kept to answer a call sent again after a lost connection (see Bus.resend_unanswered).
REPLY_CACHE_SIZE = 4096
REPLY_CACHE_BYTES = 64 * 1024

# How often held calls are checked for acks and deadlines. The caller keeps the exact
# deadline; the callee stops work within this much of it.
WATCH_EVERY = 0.05


DEADLINE = "deadline"


@dataclass(eq=False, slots=True)
class _InFlight:
    """A request being handled, in its own task."""

    task: asyncio.Task[Any]
    reply: str
    started: float
    deadline: float
    acked: bool = False
    reason: str | None = field(default=None)
    """Why this runtime cancelled the task: WITHDRAWN, SHUTDOWN or DEADLINE."""

    def cancel(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self.task.cancel()


def _params_of(env: RequestEnvelope | NotificationEnvelope) -> dict[str, Any]:
    """The action's parameters: ``payload.parameters``, or a delegation's structured ``input``."""
    if env.payload.parameters is not None:
        return env.payload.parameters
    d = env.delegation
    return d.input if d is not None and isinstance(d.input, dict) else {}


class AgentHost:
    """One running instance of an agent inside a runtime."""

    def __init__(self, runtime: Runtime, agent: Agent) -> None:
        self.runtime = runtime
        self.agent = agent
        self.instance_id = f"{agent.name}-{uuid.uuid4().hex[:8]}"
        self.slots = Slots(agent.max_concurrency)
        self.stats = HostStats()
        self.accepted = 0
        """Requests taken and not finished: waiting for a slot, running, or waiting on a call."""
        self.stopping = False
        self._inflight: dict[str, _InFlight] = {}
        self._replies: OrderedDict[str, bytes | None] = OrderedDict()
        """Reply subject -> the reply sent (None while in progress), to answer repeats."""
        self._runtime_replies = runtime.bus.subjects.reply_root
        self._subs: list[Subscription] = []
        self._reported: AgentStatus = "available"

    # -- registry-facing state ---------------------------------------------------

    @property
    def load(self) -> int:
        return self.slots.used + self.slots.waiting

    @property
    def status(self) -> AgentStatus:
        if self.stopping:
            return "offline"
        if self.slots.waiting or self.slots.full:
            return "busy"
        return "available"

    def state(self) -> InstanceState:
        return InstanceState(self.instance_id, self.status, self.load, self.agent.max_concurrency)

    def profile(self) -> AgentProfile:
        return AgentProfile(
            agent_id=self.instance_id,
            name=self.agent.name,
            version=self.agent.version,
            description=self.agent.description,
            capabilities=list(self.agent.capabilities),
            status=self.status,
            last_seen=_now_ms(),
            load=self.load,
            capacity=self.agent.max_concurrency,
            metadata={
                "runtime": self.runtime.id,
                "actions": sorted(self.agent.actions),
                **self.agent.metadata,
            },
        )

    def _check_status(self) -> None:
        slots = self.slots
        busy = bool(slots.waiting) or slots.used >= slots.capacity
        if busy != (self._reported == "busy") and not self.stopping:
            self._reported = self.status
            self.runtime._state_changed(self)

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        subjects = self.runtime.bus.subjects
        transport = self.runtime.bus.transport
        name = self.agent.name
        self._subs.append(await transport.subscribe(subjects.agent(name), self.on_message, queue=name))
        self._subs.append(await transport.subscribe(subjects.instance(self.instance_id), self.on_message))
        for topic in self.agent.topics:
            self._subs.append(await transport.subscribe(subjects.notify(topic), self.on_message, queue=name))
        self.runtime._spawn(self._watch_held_calls())

    async def _watch_held_calls(self) -> None:
        """Cancel handlers past their deadline; tell callers which instance holds long calls.

        One periodic sweep instead of a timer per request: the request path stays free
        of timer bookkeeping.
        """
        headers = {ACK_HEADER: self.instance_id}
        # Only runtimes understand acks; a plain NATS requester would take one for the reply.
        runtime_replies = self.runtime.bus.subjects.reply_root
        clock = self.runtime.clock
        while not self.stopping:
            await anyio.sleep(WATCH_EVERY)
            now = clock()
            for inflight in list(self._inflight.values()):
                if now >= inflight.deadline:
                    inflight.cancel(DEADLINE)
                if inflight.acked or now - inflight.started < ACK_AFTER:
                    continue
                inflight.acked = True
                if not inflight.reply.startswith(runtime_replies):
                    continue
                try:
                    await self.runtime.bus.transport.publish(inflight.reply, b"", headers=headers)
                except TransportError as exc:
                    log.debug("ack to %s lost: %s", inflight.reply, exc)

    async def stop(self, grace: float) -> None:
        """Stop taking messages; give running handlers ``grace`` seconds, then cancel them."""
        self.stopping = True
        for sub in self._subs:
            await sub.unsubscribe()
        self._subs.clear()
        await self._drained(grace)
        for inflight in list(self._inflight.values()):
            inflight.cancel(SHUTDOWN)
        await self._drained(1.0)

    async def _drained(self, timeout: float) -> None:
        with anyio.move_on_after(timeout):
            while self.accepted:
                await anyio.sleep(0.01)

    def withdraw(self, correlation_ids: list[str]) -> None:
        """Cancel handlers of calls their callers withdrew."""
        for correlation_id in correlation_ids:
            inflight = self._inflight.get(correlation_id)
            if inflight is not None:
                inflight.cancel(WITHDRAWN)

    # -- receiving ---------------------------------------------------------------------

    async def on_message(self, msg: Message) -> None:
        """Subscription callback: admit or refuse at once, handle in a task of the runtime."""
        headers = msg.headers
        if headers and PROBE_HEADER in headers:
            if msg.reply:
                with contextlib.suppress(TransportError):
                    await self.runtime.bus.transport.publish(
                        msg.reply, b"", headers={ALIVE_HEADER: self.instance_id}
                    )
            return
        if self.accepted >= self.agent.max_concurrency + self.agent.max_queue:
            self.stats.overloaded += 1
            if msg.reply:
                error = Overloaded(
                    f"{self.instance_id} has {self.accepted} requests in hand; retry later",
                    agent=self.agent.name,
                )
                await self._send_reply(msg, self._error_envelope(msg, None, error))
            return
        reply = msg.reply
        if reply.startswith(self._runtime_replies):  # a runtime caller may send a call again
            if reply in self._replies:
                self.stats.repeated += 1
                done = self._replies[reply]
                if done:  # answered already: answer again; in progress or uncached: the first answers
                    await self._send_raw(msg, done)
                return
            self._replies[reply] = None
            if len(self._replies) > REPLY_CACHE_SIZE:
                self._replies.popitem(last=False)
        self.accepted += 1
        self.runtime._spawn(self._handle(msg))

    async def _handle(self, msg: Message) -> None:
        t0 = self.runtime.clock()
        started = _now_ms()
        try:
            env = self._decode(msg)
        except InvalidEnvelope as exc:
            self._finished()
            error = exc.located(self.agent.name, None)
            self._count(error)
            if msg.reply:
                await self._reply(msg, None, None, error, None)
            log.warning("%s: refused undecodable message on %s: %s", self.instance_id, msg.subject, error)
            return
        tel = self.runtime.telemetry
        if tel.tracing:
            with tel.process_span(env, msg.headers, self.agent.name, self.instance_id) as span:
                result, failure = await self._serve(msg, env, t0, started)
                tel.outcome(span, failure, result)
        else:
            await self._serve(msg, env, t0, started)

    async def _serve(
        self, msg: Message, env: RequestEnvelope | NotificationEnvelope, t0: float, started: int
    ) -> tuple[Any, A2AError | None]:
        """Admit, run, reply and audit one decoded message; returns its result or error."""
        tel = self.runtime.telemetry
        if tel.metrics:
            tel.inflight(self.agent.name, 1)
        ctx: Context | None = None
        result: Any = None
        error: A2AError | None = None
        try:
            ctx = self._admit(env, t0)
            result = await self._run(ctx, msg.reply)
        except A2AError as exc:
            error = exc.located(self.agent.name, env.metadata.hop_count)
        except Exception as exc:  # a handler's own failure goes back as AGENT_ERROR
            log.warning(
                "%s: %r failed: %s",
                self.instance_id,
                env.payload.action,
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            error = AgentError(str(exc) or type(exc).__name__).located(
                self.agent.name, env.metadata.hop_count
            )
        finally:
            self._finished()
            if tel.metrics:
                tel.inflight(self.agent.name, -1)
        self._count(error)
        if msg.reply and isinstance(env, RequestEnvelope):
            await self._reply(msg, env, result, error, ctx)
        if self.runtime.audit.enabled:
            await self.runtime.audit.emit(self._record(env, started, t0, error))
        if tel.metrics:
            code = error.code if error else None
            tel.record_handled(
                self.agent.name, env.payload.action, outcome_of(error), code, self.runtime.clock() - t0
            )
        return result, error

    def _finished(self) -> None:
        self.accepted -= 1
        self._check_status()

    def _decode(self, msg: Message) -> RequestEnvelope | NotificationEnvelope:
        env = codec.decode_envelope(msg.data)
        if not isinstance(env, (RequestEnvelope, NotificationEnvelope)):
            raise InvalidEnvelope(
                f"agents accept requests and notifications, not {env.__class__.__name__}",
                details={"field": "type"},
            )
        return env

    def _admit(self, env: RequestEnvelope | NotificationEnvelope, now: float) -> Context:
        """Callee-side checks; the caller's checks are never trusted."""
        codec.ensure_supported_version(env)
        meta = env.metadata
        check_hops(meta)
        check_depth(meta)
        check_cycle(meta, self.agent.name)
        check_fan_out(meta)
        deadline = local_deadline(meta, now)
        self.runtime.policy.admit(self.agent.name, env)
        action = self._action(env)
        check_budget(meta, action.estimated_tokens)
        ctx = Context(self.runtime, self, env, deadline)
        ctx.action = action
        ctx.params = _params_of(env)
        action.validate(ctx.params)
        return ctx

    async def _admit_stored(self, ctx: Context) -> str | None:
        """Checks that need the history store: user isolation and objectives in progress.

        Returns the key of the objective this request now holds, to release when done.
        """
        history = self.runtime.history
        env = ctx.request
        if history is None or (env.user_id is None and env.delegation is None):
            return None
        if env.user_id is not None:
            await history.claim(env.conversation_id, env.user_id)
            if env.delegation is not None and env.delegation.thread_id:
                await history.claim(env.delegation.thread_id, env.user_id)
        d = env.delegation
        if d is None or not d.objective:
            return None
        key = objective_key(env.conversation_id, env.source_agent_id, self.agent.name, d.objective)
        ttl_ms = max(1, int((ctx.deadline - self.runtime.clock()) * 1000))
        holder = await history.start_objective(key, ctx.correlation_id, ttl_ms)
        if holder is not None and holder != ctx.correlation_id:
            raise CycleDetected(
                f"{env.source_agent_id} -> {self.agent.name} with the same objective is already in progress",
                details={"objective": d.objective, "inProgress": holder},
            )
        return key

    def _action(self, env: Envelope) -> Action:
        name = env.payload.action
        if isinstance(env, NotificationEnvelope) and name in self.agent.topics:
            return Action(name, self.agent.topics[name])
        action = self.agent.actions.get(name)
        if action is None:
            raise UnknownAction(
                f"{self.agent.name} has no action {name!r}",
                details={"action": name, "actions": sorted(self.agent.actions)},
            )
        return action

    async def _run(self, ctx: Context, reply: str) -> Any:
        result = await self._run_handler(ctx, reply)
        if ctx.request.delegation is not None:
            result = await self._finish_delegation(ctx, result)
        return result

    async def _finish_delegation(self, ctx: Context, value: Any) -> DelegationResult:
        """Shape a delegated task's outcome as a DelegationResult and keep the thread's history."""
        result = as_delegation_result(value)
        if not result.tool_calls and ctx.tools_used:
            result.tool_calls = list(ctx.tools_used)
        d = ctx.request.delegation
        history = self.runtime.history
        if d is not None and d.thread_id and history is not None:
            now = time.time()
            await history.append(
                d.thread_id,
                ChatMessage(role="user", name=ctx.request.source_agent_id, content=d.task, created_at=now),
                ChatMessage(
                    role="assistant",
                    name=self.agent.name,
                    content=result.result or result.summary,
                    created_at=now,
                ),
            )
        return result

    async def _run_handler(self, ctx: Context, reply: str) -> Any:
        """Run the handler in this task, under the deadline, cancellable by withdraw/stop.

        Cancellation is the task's own (``Task.cancel``) rather than a cancel scope: a
        cancel scope per request costs more than the rest of the handling together.
        The reason recorded on ``_InFlight`` tells our cancellations from a shutdown of
        the whole runtime, which keeps propagating.
        """
        action = ctx.action
        assert action is not None
        params = ctx.params
        task = asyncio.current_task()
        assert task is not None
        inflight = _InFlight(task, reply, self.runtime.clock(), ctx.deadline)
        correlation_id = ctx.correlation_id
        self._inflight[correlation_id] = inflight
        objective: str | None = None
        try:
            objective = await self._admit_stored(ctx)
            await self.slots.acquire()
            ctx._holds_slot = True
            self._check_status()
            try:
                return await action.handler(ctx, params)
            finally:
                if ctx._holds_slot:
                    self.slots.release()
                    ctx._holds_slot = False
        except asyncio.CancelledError:
            if inflight.reason is None or task.uncancel() > 0:
                raise  # not ours (the runtime is closing): keep cancelling
            if inflight.reason == WITHDRAWN:
                raise Cancelled("the caller withdrew the call", details={"reason": WITHDRAWN}) from None
            if inflight.reason == SHUTDOWN:
                raise Cancelled(
                    f"{self.instance_id} is shutting down", details={"reason": SHUTDOWN}
                ) from None
            raise DeadlineExceeded(
                f"{self.agent.name} did not finish {action.name!r} before the deadline"
            ) from None
        finally:
            del self._inflight[correlation_id]
            if objective is not None and self.runtime.history is not None:
                with anyio.CancelScope(shield=True), contextlib.suppress(A2AError):
                    await self.runtime.history.finish_objective(objective, correlation_id)

    # -- replying ----------------------------------------------------------------------

    async def _reply(
        self,
        msg: Message,
        env: Envelope | None,
        result: Any,
        error: A2AError | None,
        ctx: Context | None,
    ) -> None:
        if isinstance(error, Cancelled) and error.details.get("reason") == WITHDRAWN:
            return  # the caller is gone; nobody reads this reply
        reply: Envelope
        if error is None:
            assert isinstance(env, RequestEnvelope) and ctx is not None
            reply = self._response(env, result, ctx)
            try:
                data = self.runtime.bus.encode(reply)
            except (TypeError, msgspec.EncodeError) as exc:
                error = AgentError(f"result of {env.payload.action!r} is not JSON-serialisable: {exc}")
            except PayloadTooLarge as exc:
                error = exc
            else:
                await self._send_raw(msg, data)
                return
            error.located(self.agent.name, env.metadata.hop_count)
        await self._send_reply(msg, self._error_envelope(msg, env, error, ctx))

    def _response(self, env: RequestEnvelope, result: Any, ctx: Context) -> ResponseEnvelope:
        meta = env.metadata
        return ResponseEnvelope(
            message_id=new_id(),
            source_agent_id=self.agent.name,
            target_agent_id=env.source_agent_id,
            conversation_id=env.conversation_id,
            in_reply_to=env.message_id,
            user_id=env.user_id,
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(
                action=env.payload.action,
                result=result,
                usage=ctx.usage if ctx.usage.total else None,
            ),
            metadata=Metadata(
                timestamp=_now_ms(),
                correlation_id=meta.correlation_id,
                hop_count=meta.hop_count,
                max_hops=meta.max_hops,
                depth=meta.depth,
                max_depth=meta.max_depth,
                priority=meta.priority,
            ),
        )

    def _error_envelope(
        self, msg: Message, env: Envelope | None, error: A2AError, ctx: Context | None = None
    ) -> ErrorEnvelope:
        correlation_id = env.metadata.correlation_id if env else msg.reply.rsplit(".", 1)[-1]
        return ErrorEnvelope(
            message_id=new_id(),
            source_agent_id=self.agent.name,
            target_agent_id=env.source_agent_id if env else "unknown",
            conversation_id=env.conversation_id if env else "unknown",
            in_reply_to=env.message_id if env else None,
            user_id=env.user_id if env else None,
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(
                action=env.payload.action if env else "",
                error=error.to_info(),
                usage=ctx.usage if ctx is not None and ctx.usage.total else None,
            ),
            metadata=Metadata(
                timestamp=_now_ms(),
                correlation_id=correlation_id or "unknown",
                hop_count=env.metadata.hop_count if env else 0,
            ),
        )

    async def _send_reply(self, msg: Message, reply: Envelope) -> None:
        await self._send_raw(msg, self.runtime.bus.encode(reply))

    async def _send_raw(self, msg: Message, data: bytes) -> None:
        if msg.reply in self._replies:
            self._replies[msg.reply] = data if len(data) <= REPLY_CACHE_BYTES else b""
        try:
            await self.runtime.bus.publish_raw(msg.reply, data)
        except A2AError as exc:
            log.warning("%s: reply to %s lost: %s", self.instance_id, msg.reply, exc)

    # -- accounting --------------------------------------------------------------------

    def _count(self, error: A2AError | None) -> None:
        outcome = outcome_of(error)
        if outcome == "ok":
            self.stats.handled += 1
        elif outcome == "refused":
            self.stats.refused += 1
            if isinstance(error, InvalidEnvelope):
                self.stats.invalid += 1
        elif outcome == "cancelled":
            self.stats.cancelled += 1
        else:
            self.stats.failed += 1

    def _record(self, env: Envelope, started: int, t0: float, error: A2AError | None) -> AuditRecord:
        meta = env.metadata
        return AuditRecord(
            request_id=meta.correlation_id,
            conversation_id=env.conversation_id,
            origin=env.source_agent_id,
            target=self.agent.name,
            action=env.payload.action,
            outcome=outcome_of(error),
            side="callee",
            started_at=started,
            duration_ms=round((self.runtime.clock() - t0) * 1000, 3),
            hop=meta.hop_count,
            depth=meta.depth,
            instance=self.instance_id,
            user_id=env.user_id,
            parent_id=meta.parent_id,
            routed_by=",".join(env.required_capabilities) if env.required_capabilities else None,
            objective=env.delegation.objective or None if env.delegation else None,
            error_code=error.code if error else None,
            error_message=error.message if error else None,
            error_agent=error.agent if error else None,
        )
