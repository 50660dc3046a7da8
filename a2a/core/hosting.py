"""Hosting one agent instance: admission, bounded concurrent handlers, replies, accounting.

Per message (see :meth:`AgentHost.deliver`):

    endpoint (bus)   probes and repeats are answered there; the rest arrives here
    deliver          refuse at once with OVERLOADED past max_concurrency + max_queue,
                     else queue the message for the instance's workers (bus.Workers)
    _handle          decode -> admit (callee-side checks) -> slot -> handler -> reply -> audit
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from bus import Bus, Endpoint, TaskSet, Workers, codec
from bus.errors import (
    A2AError,
    Cancelled,
    DeadlineExceeded,
    InvalidEnvelope,
    Overloaded,
    Unavailable,
    outcome_of,
)
from bus.protocol import CALLER_GONE, SHUTDOWN, WITHDRAWN
from bus.rejects import Rejects
from bus.wire import SUPPORTED_VERSIONS, NotificationEnvelope, RequestEnvelope
from discovery.profile import AgentProfile, AgentStatus
from discovery.registry import InstanceState
from transports import Message

from ..stores.audit import callee_record
from .admission import admit, claim_stored
from .agent import Agent
from .calls import CallPath
from .context import Context
from .delegating import finish_delegation
from .failures import as_failure
from .host_stats import HostStats, Readiness
from .instance import ChildTasks, Instance
from .services import Services
from .slots import Lease, Slots

__all__ = ["AgentHost", "HostStats", "Readiness"]

log = logging.getLogger("a2a.host")


class AgentHost:
    """One running instance of an agent inside a runtime.

    Args:
        on_state: called when the instance's status changes (busy, available), so the
            runtime can tell the registry without waiting for the next heartbeat.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        bus: Bus,
        services: Services,
        calls: CallPath,
        runtime_id: str,
        on_state: Callable[[AgentHost], None],
        tasks: ChildTasks | None = None,
    ) -> None:
        self.agent = agent
        self.instance_id = f"{agent.name}-{uuid.uuid4().hex[:8]}"
        self.slots = Slots(agent.max_concurrency, on_change=self._busy_changed)
        self.accepted = 0
        """Requests taken and not finished: waiting for a slot, running, or waiting on a call."""
        self.stopping = False
        self.endpoint: Endpoint | None = None
        self._bus = bus
        self._services = services
        self._runtime_id = runtime_id
        self._on_state = on_state
        self._ready = True
        self._limit = agent.max_concurrency + agent.max_queue
        subjects = bus.subjects  # what this process's own handlers publish to it
        self._local = {subjects.agent(agent.name), subjects.instance(self.instance_id)}
        self._stats = HostStats()
        self.rejects = Rejects(log, f"{self.instance_id}: message")
        """Messages refused before they could be read as a request (counted, logged at a bounded rate)."""
        self._tasks = TaskSet()
        self._workers = Workers(self._handle, self._tasks)
        self._instance = Instance(
            services, calls, agent.name, self.instance_id, self._progress, tasks, agent.redact_params
        )
        self._sender_of = bus.subjects.sender_of
        self._resources = AsyncExitStack()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: anyio.Event | None = None  # set once none is in hand, while drained waits

    # -- registry-facing state ---------------------------------------------------------

    @property
    def load(self) -> int:
        return self.slots.used + self.slots.waiting

    @property
    def status(self) -> AgentStatus:
        if self.stopping or not self._ready:
            return "offline"
        return "busy" if self.slots.busy else "available"

    @property
    def instance(self) -> Instance:
        """What every handling of this instance shares (its contexts are made from it)."""
        return self._instance

    @property
    def stats(self) -> HostStats:
        repeated = self.endpoint.repeated if self.endpoint is not None else 0
        return dataclasses.replace(self._stats, repeated=repeated)

    def state(self) -> InstanceState:
        return InstanceState(
            self.instance_id, self.status, self.load, self.agent.max_concurrency, trust=self._trust()
        )

    def _trust(self) -> float | None:
        """The score an external agent's proxy publishes; None for agents of the deployment."""
        tracker = self.agent.trust
        return None if tracker is None else tracker.score(time.monotonic())

    def profile(self) -> AgentProfile:
        agent = self.agent
        return AgentProfile(
            agent_id=self.instance_id,
            name=agent.name,
            version=agent.version,
            description=agent.description,
            capabilities=list(agent.capabilities),
            status=self.status,
            last_seen=int(time.time() * 1000),
            load=self.load,
            capacity=agent.max_concurrency,
            trust=self._trust(),
            card_signature=None if agent.trust is None else agent.trust.signature,
            protocol_version=SUPPORTED_VERSIONS[-1],
            metadata={
                "runtime": self._runtime_id,
                "actions": sorted(agent.actions),
                **agent.action_specs(),
                **agent.metadata,
            },
        )

    def _busy_changed(self, busy: bool) -> None:
        if not self.stopping:
            self._on_state(self)

    def _ready_changed(self, ready: bool) -> None:
        if ready is not self._ready:
            self._ready = ready
            if not self.stopping:
                self._on_state(self)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Enter the agent's lifespan, then start receiving."""
        self._loop = asyncio.get_running_loop()
        if self.agent.lifespan is not None:
            resource = await self._resources.enter_async_context(self.agent.lifespan())
            if isinstance(resource, Readiness):
                resource.watch_ready(self._ready_changed)
        try:
            self.endpoint = await self._bus.endpoint(
                self.agent.name, self.instance_id, deliver=self.deliver, topics=self.agent.topics
            )
        except BaseException:
            await self._resources.aclose()
            raise

    async def stop_taking(self) -> None:
        """Take no new work: from the network, only what the server routed here before it knew;
        from this process's own handlers, all until :meth:`close` (they finish work in hand)."""
        endpoint = self.endpoint
        if endpoint is not None:  # its calls in hand are still probed and answered meanwhile
            await endpoint.stop_taking()
        self.stopping = True

    async def close(self) -> None:
        """Cancel the handlers still running (SHUTDOWN) and let go of everything."""
        endpoint = self.endpoint
        if endpoint is not None:
            endpoint.cancel_all(SHUTDOWN)
        await self.drained(1.0)
        if endpoint is not None:  # first: nothing arrives then that could not be refused
            await endpoint.close()
            self._bus.forget(endpoint)
        await self._tasks.aclose()
        await self._resources.aclose()

    async def drained(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the requests in hand to finish."""
        self._idle = idle = anyio.Event()
        with anyio.move_on_after(timeout):
            if self.accepted:
                await idle.wait()

    def _finished(self) -> None:
        """A request taken is done with: the last one in hand wakes :meth:`drained`."""
        self.accepted -= 1
        if not self.accepted and self._idle is not None:
            self._idle.set()

    # -- receiving ---------------------------------------------------------------------------

    def deliver(self, msg: Message) -> None:
        """Take a message for a worker, or refuse it at once when too many are in hand
        (or, while the instance stops, unless this process's handlers sent it)."""
        if self.accepted >= self._limit or (self.stopping and msg.subject not in self._local):
            self._stats.overloaded += 1
            if msg.reply:
                self._tasks.spawn(self._refuse(msg))
            return
        self.accepted += 1
        self._workers.submit(msg)

    async def _refuse(self, msg: Message) -> None:
        assert self.endpoint is not None
        name, busy = self.agent.name, f"{self.instance_id} has {self.accepted} requests in hand; retry later"
        stopping = Unavailable(f"{self.instance_id} is shutting down", agent=name)
        await self.endpoint.fail(msg.reply, None, stopping if self.stopping else Overloaded(busy, agent=name))

    async def _progress(self, reply: str, data: bytes) -> None:
        if self.endpoint is not None:
            await self.endpoint.progress(reply, data)

    async def _handle(self, msg: Message) -> None:
        """Decode, admit, run, reply, count and audit one message: the callee's hot path.

        This runs once per message, so it is written flat: no helper coroutine per step,
        each check guarded by the condition under which it can refuse, a slot taken without
        awaiting when one is free. The handler runs in the worker's task (which handles
        nothing else meanwhile) under the call's deadline. Cancellation is that task's own
        (``Task.cancel``, by the endpoint, with the reason on the held call) rather than a
        cancel scope, which would cost more than the rest of the handling; a cancellation
        without our reason (the runtime closing) propagates.
        """
        services = self._services
        endpoint = self.endpoint
        assert endpoint is not None
        name = self.agent.name
        t0 = services.clock()
        try:
            env = codec.decode_envelope(msg.data)
            if type(env) is not RequestEnvelope:
                if type(env) is not NotificationEnvelope:
                    raise InvalidEnvelope(
                        f"agents accept requests and notifications, not {env.__class__.__name__}",
                        details={"field": "type"},
                    )
                if msg.reply:  # someone waits for an answer a notification never gets
                    raise InvalidEnvelope(
                        "a notification gets no reply: send a request to wait for one",
                        details={"field": "type"},
                    )
        except InvalidEnvelope as exc:
            self._finished()
            refusal = exc.located(name, None)
            self._count(refusal)
            if msg.reply:
                await endpoint.fail(msg.reply, None, refusal)
            self.rejects("invalid envelope", f"on {msg.subject}: {refusal}")
            return
        reply = msg.reply
        request_id = env.metadata.key
        history = services.history
        trace = services.telemetry.handle(env, msg.headers, name, self.instance_id)
        try:
            ctx: Context | None = None
            held: Lease | None = None
            objective: str | None = None
            result: Any = None
            error: A2AError | None = None
            answered = False
            try:
                subject = msg.subject
                if type(env) is RequestEnvelope:  # a request's sender is its subject's last token
                    sender = subject[subject.rfind(".") + 1 :]
                else:
                    sender = self._sender_of(subject)
                action, params, deadline = admit(self.agent, services.policy, services.guard, env, sender, t0)
                task = asyncio.current_task(self._loop)
                assert task is not None
                held = Lease(self.slots, task, reply, t0, deadline, sender, env)
                endpoint.hold(request_id, held)
                ctx = Context(self._instance, env, deadline, action.name, params, held)
                if history is not None and (env.user_id is not None or env.delegation is not None):
                    ttl_ms = max(1, int((deadline - services.clock()) * 1000))
                    objective = await claim_stored(history, name, env, ttl_ms)
                if not held.take_nowait():
                    await held.take()
                try:
                    result = await action.handler(ctx, params)
                finally:
                    held.give_up()
                if env.delegation is not None:
                    result = await finish_delegation(services, name, env, result, ctx.tools_used)
                answered = True
            except asyncio.CancelledError:
                if held is None or held.reason is None or held.task.uncancel() > 0:
                    raise  # not ours (the runtime is closing): keep cancelling
                error = self._stopped(held.reason, env).located(name, env.metadata.hop_count)
            except A2AError as exc:
                error = as_failure(exc, services.redactor).located(name, env.metadata.hop_count)
            except Exception as exc:  # a handler's own failure goes back as AGENT_ERROR
                error = as_failure(exc, services.redactor).located(name, env.metadata.hop_count)
                log.warning(
                    "%s: %r failed: %s",
                    self.instance_id,
                    env.payload.action[:200],
                    error.message,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )
            finally:
                if held is not None:
                    endpoint.release(request_id, held)
                if objective is not None and history is not None:
                    with anyio.CancelScope(shield=True), contextlib.suppress(A2AError):
                        await history.finish_objective(objective, request_id, answered=answered)
                self._finished()
            if reply and type(env) is RequestEnvelope:
                usage = ctx.spent if ctx is not None else None
                if error is None:
                    error = await endpoint.respond(reply, env, result, usage)
                else:
                    await endpoint.fail(reply, env, error, usage)
            if error is None:
                self._stats.handled += 1
            else:
                self._count(error)
            trace.ended(error, result)
            audit = services.audit
            if audit.enabled:
                spent = ctx.spent if ctx is not None else None
                tokens = spent.total if spent is not None else 0
                tools = ctx.tools_used if ctx is not None else ()
                elapsed = services.clock() - t0
                audit.emit(callee_record(env, name, self.instance_id, elapsed, error, tokens, tools))
            if services.recorder is not None:
                services.recorder.capture(env, name, result, error)
        finally:
            trace.close()

    def _stopped(self, reason: str, env: RequestEnvelope | NotificationEnvelope) -> A2AError:
        """The error a handler this endpoint stopped ends with."""
        if reason == WITHDRAWN:
            return Cancelled("the caller withdrew the call", details={"reason": WITHDRAWN})
        if reason == SHUTDOWN:
            return Cancelled(f"{self.instance_id} is shutting down", details={"reason": SHUTDOWN})
        if reason == CALLER_GONE:
            return Cancelled("the runtime that made the call is gone", details={"reason": CALLER_GONE})
        return DeadlineExceeded(
            f"{self.agent.name} did not finish {env.payload.action!r} before the deadline"
        )

    def _count(self, error: A2AError | None) -> None:
        outcome = outcome_of(error)
        stats = self._stats
        if outcome == "ok":
            stats.handled += 1
        elif outcome == "refused":
            stats.refused += 1
            stats.invalid += isinstance(error, InvalidEnvelope)
        elif outcome == "cancelled":
            stats.cancelled += 1
        else:
            stats.failed += 1
