"""The runtime: hosts agents, makes calls, keeps the registry informed."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup
from opentelemetry.trace import Span

from bus import Bus
from bus.errors import (
    A2AError,
    CycleDetected,
    DeadlineExceeded,
    NoCapableAgent,
    NoResponders,
    Unavailable,
)
from bus.handoff import Delegation, Grants
from bus.ids import new_id
from bus.limits import check_cycle, check_depth
from bus.wire import (
    PROTOCOL_VERSION,
    Metadata,
    NotificationEnvelope,
    Payload,
    Priority,
    RequestEnvelope,
    ResponseEnvelope,
)
from discovery import LocalView, Registry
from transports import MessageHandler, Subscription, Transport, TransportError

from ._host import AgentHost
from .agent import Agent
from .audit import AuditLog, AuditRecord, outcome_of
from .config import Settings, connect_nats
from .context import Context
from .context_builder import ContextBuilder
from .history import HistoryStore, objective_key
from .policy import Policy
from .redact import Redactor
from .route import Route, Target, as_route
from .telemetry import Telemetry

__all__ = ["Runtime"]

log = logging.getLogger("a2a.runtime")

# How long routing by capability waits for the first registry snapshot.
_VIEW_READY_WAIT = 2.0
# Instances tried when a capability-routed call finds its instance gone.
_ROUTE_ATTEMPTS = 3


def _now_ms() -> int:
    return int(time.time() * 1000)


def _new_task(coro: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop) -> asyncio.Task[None]:
    if _EAGER:
        return asyncio.Task(coro, loop=loop, eager_start=True)  # type: ignore[call-arg,unused-ignore]
    return loop.create_task(coro)


_EAGER = sys.version_info >= (3, 12)


async def _shielded(close: Callable[[], Awaitable[None]]) -> None:
    """Run a cleanup step to its end (5 s at most), even while the caller is being cancelled."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        await close()


class Runtime:
    """Connects to NATS (and Redis), hosts agents, and calls agents anywhere.

    ::

        async with Runtime(Settings.from_env()) as rt:
            await rt.serve(planner, reader)          # host agents in this process
            result = await rt.call("planner", "run", {"task": "..."})

    Args:
        settings: connection settings and default limits (``Settings.from_env()`` if omitted).
        transport: use this transport instead of connecting to ``settings.nats_url``
            (for example a ``MemoryTransport`` in unit tests); the runtime closes it.
        registry: use this registry instead of connecting to ``settings.redis_url``
            (with neither, the runtime routes by name only and keeps no history).
        policy: delegation rights checked on both sides of each hop (default: from
            the roster file ``settings.roster``, else everything allowed).
        redactor: PII rules applied before delegation and in audit records.
        context_builder: selects and fits delegated context; pass one with your
            model's token counter.
        telemetry: tracing and metrics (default: as the OTEL_* variables say; off when unset).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        transport: Transport | None = None,
        registry: Registry | None = None,
        policy: Policy | None = None,
        redactor: Redactor | None = None,
        context_builder: ContextBuilder | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.id = uuid.uuid4().hex[:12]
        if policy is None:
            policy = Policy.from_file(self.settings.roster) if self.settings.roster else Policy()
        self.policy = policy
        self.redactor = redactor or Redactor()
        self.context_builder = context_builder or ContextBuilder()
        self.telemetry = telemetry or Telemetry.from_env(
            f"a2a-{self.settings.client_name}", redactor=self.redactor
        )
        self.hosts: dict[str, AgentHost] = {}
        self.registry: Registry | None = registry
        self.view: LocalView | None = None
        self.history: HistoryStore | None = None
        self._transport = transport
        self._objectives: set[str] = set()
        self._degraded: set[str] = set()
        self._heartbeat_tick = 0.0
        self._heartbeat_ok = 0.0
        self._stack: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._state_event = anyio.Event()
        self._registry_down = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._agent_subjects: dict[str, str] = {}
        self.clock: Callable[[], float] = time.monotonic
        """The event loop's clock (monotonic seconds); deadlines are on this clock."""
        self.bus: Bus
        self.audit: AuditLog

    # -- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> Runtime:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            await self._open(stack)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def _open(self, stack: AsyncExitStack) -> None:
        s = self.settings
        self.clock = asyncio.get_running_loop().time
        stack.push_async_callback(_shielded, self.telemetry.aclose)
        if self._transport is None:
            try:
                self._transport = await connect_nats(s, name=f"a2a-{self.id}")
            except TransportError as exc:
                raise Unavailable(str(exc)) from None
        stack.push_async_callback(_shielded, self._transport.aclose)
        if self.registry is None and s.redis_url:
            self.registry = Registry.from_url(
                s.redis_url, namespace=s.namespace, heartbeat_interval=s.heartbeat_interval
            )
        if self.registry is not None:
            stack.push_async_callback(_shielded, self.registry.aclose)
            self.history = HistoryStore(self.registry.redis, s.namespace)
        self.bus = Bus(
            self._transport,
            namespace=s.namespace,
            runtime_id=self.id,
            identity=s.nats_user or "anon",
            max_payload=s.max_payload,
        )
        self.audit = AuditLog(self.bus, enabled=s.audit, redactor=self.redactor)
        await self.bus.start()
        await self.audit.ensure_stream()
        stack.push_async_callback(_shielded, self.bus.aclose)
        self._tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(self._tg.cancel_scope.cancel)
        stack.push_async_callback(_shielded, self._cancel_tasks)
        cancels = await self.bus.subscribe_cancels(self._on_cancel)
        stack.push_async_callback(_shielded, cancels.unsubscribe)
        self._tg.start_soon(self.bus.watch)
        if self.registry is not None:
            self.view = LocalView(self.registry)
            if self.telemetry.metrics:
                view = self.view
                self.telemetry.watch_registry(lambda: len(view.entries()))
            await self._tg.start(self.view.run)
            self._tg.start_soon(self._heartbeats)
        if self.audit.enabled:
            self._tg.start_soon(self.audit.run)
            stack.push_async_callback(_shielded, self.audit.flush)  # runs first on exit

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._stack is not None
        try:
            with anyio.CancelScope(shield=True):
                await self._stop_hosts(grace=5.0 if exc is None else 0.5)
        finally:
            stack, self._stack = self._stack, None
            # The body's exception is not handed to the stack: the internal task group
            # would wrap it in an ExceptionGroup. It propagates unchanged instead.
            await stack.aclose()
        return None

    async def _stop_hosts(self, grace: float) -> None:
        hosts = list(self.hosts.values())
        if not hosts:
            return
        async with anyio.create_task_group() as tg:
            for host in hosts:
                tg.start_soon(host.stop, grace)
        if self.registry is not None:
            with anyio.move_on_after(2.0):
                for host in hosts:
                    try:
                        await self.registry.deregister(host.instance_id)
                    except Unavailable as exc:
                        log.warning("could not deregister %s: %s", host.instance_id, exc)
                        break
        self.hosts.clear()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run one message's handling in a task the runtime owns.

        Per-message tasks are plain asyncio tasks kept in ``self._tasks``: anyio's
        ``start_soon`` costs about 30 µs a task, several times a whole NATS round trip's
        client work. The runtime cancels and awaits whatever is left when it closes. On
        Python 3.12+ the task starts eagerly, so a handler that never waits finishes
        (reply included) without being scheduled at all.
        """
        task = _new_task(coro, asyncio.get_running_loop())
        if task.done():
            self._task_done(task)
            return
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("message handling failed", exc_info=task.exception())

    async def _cancel_tasks(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)

    # -- hosting ---------------------------------------------------------------------

    async def serve(self, *agents: Agent) -> list[AgentHost]:
        """Start one instance of each agent in this process: subscribe, register, heartbeat."""
        started = []
        for agent in agents:
            if agent.name in self.hosts:
                raise ValueError(f"{agent.name} is already served by this runtime")
            host = AgentHost(self, agent)
            await host.start()
            self.hosts[agent.name] = host
            started.append(host)
            await self._register(host)
        await self.bus.transport.flush()
        return started

    async def _register(self, host: AgentHost) -> None:
        profile = host.profile()
        if self.view is not None:
            self.view.upsert(profile)
        if self.registry is not None:
            try:
                await self.registry.register(profile)
            except Unavailable as exc:
                log.warning("%s not registered yet (%s); heartbeats will retry", host.instance_id, exc)

    def _state_changed(self, host: AgentHost) -> None:
        if self.view is not None:
            state = host.state()
            self.view.set_state(state.agent_id, state.status, state.load, state.capacity)
        self._state_event.set()

    async def _heartbeats(self) -> None:
        assert self.registry is not None
        self._heartbeat_tick = self._heartbeat_ok = self.clock()
        while True:
            self._heartbeat_tick = self.clock()
            with anyio.move_on_after(self.registry.heartbeat_interval):
                await self._state_event.wait()
            if self._state_event.is_set():
                self._state_event = anyio.Event()
                await anyio.sleep(0.02)  # coalesce a burst of status flips into one write
            if not self.hosts:
                continue
            try:
                missing = await self.registry.heartbeat([h.state() for h in self.hosts.values()])
                for host in self.hosts.values():
                    if host.instance_id in missing and not host.stopping:
                        await self.registry.register(host.profile())
                if self._registry_down:
                    log.warning("registry reachable again; heartbeats resumed")
                self._registry_down = False
                self._heartbeat_ok = self.clock()
            except Unavailable as exc:
                if not self._registry_down:
                    log.warning("heartbeat failed: %s", exc)
                self._registry_down = True
                if self.telemetry.metrics:
                    self.telemetry.heartbeat_missed(len(self.hosts))

    def health(self) -> dict[str, Any]:
        """Liveness and readiness, as the health endpoint reports them.

        Live while the heartbeat loop ticks; ready while NATS is connected and, with a
        registry, a heartbeat succeeded within three intervals.
        """
        now = self.clock()
        window = 3 * self.settings.heartbeat_interval
        nats_up = self._transport is not None and self._transport.is_connected
        report: dict[str, Any] = {
            "runtime": self.id,
            "agents": {name: host.instance_id for name, host in self.hosts.items()},
            "nats": nats_up,
            "registry": None,
        }
        live = ready = nats_up
        if self.registry is not None and self.hosts:
            tick_age, ok_age = now - self._heartbeat_tick, now - self._heartbeat_ok
            report["registry"] = {"lastHeartbeatSeconds": round(ok_age, 3), "loopSeconds": round(tick_age, 3)}
            live = tick_age < window + self.settings.heartbeat_interval
            ready = ready and ok_age < window
        report["live"] = live
        report["ready"] = ready
        return report

    async def serve_health(self, port: int, host: str = "0.0.0.0") -> int:
        """Serve /livez, /readyz and /healthz on ``port`` (0: any free port); returns the port."""
        from .health import serve_health

        assert self._tg is not None, "the runtime is not running"
        return int(await self._tg.start(serve_health, self, port, host))

    async def serve_forever(self) -> None:
        """Block until SIGINT or SIGTERM (then leaving ``async with`` shuts down cleanly)."""
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                log.info("received %s; shutting down", signal.Signals(signum).name)
                return

    def _on_cancel(self, correlation_ids: list[str]) -> None:
        for host in self.hosts.values():
            host.withdraw(correlation_ids)

    # -- calling ---------------------------------------------------------------------

    async def call(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        priority: Priority | None = None,
        budget: int | None = None,
    ) -> Any:
        """Call an agent from outside any agent and return its result.

        ``timeout`` is the call's deadline in seconds (default ``settings.default_timeout``);
        ``user_id`` is carried down the whole call chain; ``budget`` caps the tokens the
        call and everything it delegates may use.

        Raises:
            A2AError: the typed error the call ended with.
        """
        response = await self.request(
            target,
            action,
            params,
            timeout=timeout,
            user_id=user_id,
            conversation_id=conversation_id,
            priority=priority,
            budget=budget,
        )
        return response.payload.result

    async def request(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        priority: Priority | None = None,
        budget: int | None = None,
    ) -> ResponseEnvelope:
        """Like :meth:`call`, returning the whole response envelope (usage, hop, ids)."""
        return await self._request(
            target,
            action,
            params,
            timeout=timeout,
            user_id=user_id,
            conversation_id=conversation_id,
            priority=priority,
            budget=budget,
        )

    async def notify(
        self, topic: str, params: dict[str, Any] | None = None, *, user_id: str | None = None
    ) -> None:
        """Publish a notification on ``topic`` from outside any agent."""
        await self._notify(topic, params, user_id=user_id)

    def _new_metadata(
        self,
        parent: Context | None,
        *,
        timeout: float,
        priority: Priority | None,
        budget: int | None,
        nested: bool = True,
        fan_out: int | None = None,
        correlation_id: str | None = None,
    ) -> Metadata:
        now = _now_ms()
        ttl_ms = int(timeout * 1000)
        if parent is None:
            s = self.settings
            return Metadata(
                timestamp=now,
                correlation_id=correlation_id or new_id(),
                max_hops=s.max_hops,
                max_depth=s.max_depth,
                priority=priority or "normal",
                ttl_ms=ttl_ms,
                deadline=now + ttl_ms,
                budget=budget,
            )
        pm = parent.request.metadata
        depth = pm.depth + 1
        # Never deeper than the parent allowed, nor than the calling agent's own limit; a
        # callee that may not delegate gets a limit its own calls would reach at once.
        max_depth = min(pm.max_depth, parent.rules.max_depth)
        if not nested:
            max_depth = min(max_depth, depth + 1)
        return Metadata(
            timestamp=now,
            correlation_id=correlation_id or new_id(),
            hop_count=pm.hop_count,
            max_hops=pm.max_hops,
            priority=priority or pm.priority,
            ttl_ms=ttl_ms,
            deadline=now + ttl_ms,
            depth=depth,
            max_depth=max_depth,
            call_chain=[*pm.call_chain, parent.agent],
            budget=budget if budget is not None else pm.budget,
            parent_id=pm.correlation_id,
            fan_out=fan_out,
            max_fan_out=parent.rules.max_fan_out,
        )

    async def _request(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None,
        *,
        parent: Context | None = None,
        timeout: float | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        priority: Priority | None = None,
        budget: int | None = None,
        grants: Grants | None = None,
        delegation: Delegation | None = None,
        fan_out: int | None = None,
        correlation_id: str | None = None,
    ) -> ResponseEnvelope:
        route = as_route(target)
        clock = self.clock
        t0 = clock()
        limit = self.settings.default_timeout if timeout is None else timeout
        if parent is not None:
            limit = min(limit, parent.deadline - t0)
        caller = parent.agent if parent is not None else None
        meta = self._new_metadata(
            parent,
            timeout=max(limit, 0.0),
            priority=priority,
            budget=budget,
            nested=grants.allow_nested_calls if grants is not None else True,
            fan_out=fan_out,
            correlation_id=correlation_id,
        )
        env = RequestEnvelope(
            message_id=new_id(),
            source_agent_id=caller or self.settings.client_name,
            target_agent_id=route.agent or str(route),
            conversation_id=parent.request.conversation_id if parent else (conversation_id or new_id()),
            user_id=parent.request.user_id if parent else user_id,
            required_capabilities=list(route.capabilities) or None,
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(action=action, parameters=params),
            metadata=meta,
            grants=grants,
            delegation=delegation,
        )
        tel = self.telemetry
        if not (tel.tracing or tel.metrics):
            return await self._dispatch(env, route, t0, limit, None)
        error: A2AError | None = None
        ok = False
        try:
            if tel.tracing:
                with tel.send_span(env, str(route)) as span:
                    try:
                        response = await self._dispatch(env, route, t0, limit, span)
                    except A2AError as exc:
                        tel.outcome(span, exc)
                        raise
                    tel.outcome(span, None, response.payload.result)
            else:
                response = await self._dispatch(env, route, t0, limit, None)
            ok = True
            return response
        except A2AError as exc:
            error = exc
            raise
        finally:
            if tel.metrics:
                outcome = "ok" if ok else outcome_of(error) if error else "cancelled"
                code = error.code if error else None
                tel.record_call(str(env.target_agent_id), action, outcome, code, clock() - t0)

    async def _dispatch(
        self, env: RequestEnvelope, route: Route, t0: float, limit: float, span: Span | None
    ) -> ResponseEnvelope:
        """Route, check and send a built request, retrying another instance when one is gone."""
        clock = self.clock
        meta = env.metadata
        delegation = env.delegation
        caller = env.source_agent_id if meta.depth > 0 else None
        instance: str | None = None
        objective: str | None = None
        headers: dict[str, str] | None = None
        sent = False
        try:
            if limit <= 0:
                raise DeadlineExceeded("no time left for this call: the parent's deadline has passed")
            check_depth(meta)
            deadline = t0 + limit
            tried: set[str] = set()
            while True:
                subject, name, instance = await self._resolve(route, tried, deadline)
                env.target_agent_id = name
                self.policy.check_call(caller, name)
                check_cycle(meta, name)
                if delegation is not None and delegation.objective and objective is None:
                    objective = self._start_objective(env, name)
                if span is not None:
                    self.telemetry.destination(span, subject, name, env.payload.action)
                    headers = self.telemetry.headers()
                remaining = deadline - clock()
                meta.ttl_ms = max(0, int(remaining * 1000))
                sent = True
                try:
                    return await self.bus.request(subject, env, timeout=remaining, headers=headers)
                except NoResponders:
                    if instance is None or len(tried) + 1 >= _ROUTE_ATTEMPTS or self.view is None:
                        raise
                    # The chosen instance died since the view last heard of it: try the next best.
                    self.view.remove(instance)
                    tried.add(instance)
                    meta.hop_count -= 1
        except A2AError as exc:
            exc.located(str(env.target_agent_id) if exc.remote else env.source_agent_id, meta.hop_count)
            if not exc.remote and self.audit.enabled:
                await self.audit.emit(self._caller_record(env, route, instance, t0, exc, sent))
            raise
        finally:
            if objective is not None:
                self._objectives.discard(objective)

    def _start_objective(self, env: RequestEnvelope, target: str) -> str:
        """Caller side of seed 002's cycle rule: the same objective may not be in progress twice."""
        assert env.delegation is not None
        key = objective_key(env.conversation_id, env.source_agent_id, target, env.delegation.objective)
        if key in self._objectives:
            raise CycleDetected(
                f"{env.source_agent_id} -> {target} with the same objective is already in progress",
                details={"objective": env.delegation.objective, "target": target},
            )
        self._objectives.add(key)
        return key

    def log_degraded(self, message: str) -> None:
        """Log a degraded-service condition once per distinct message."""
        if message not in self._degraded:
            self._degraded.add(message)
            log.warning("%s", message)

    def _agent_subject(self, name: str) -> str:
        subject = self._agent_subjects.get(name)
        if subject is None:
            subject = self._agent_subjects[name] = self.bus.subjects.agent(name)
        return subject

    async def _resolve(self, route: Route, tried: set[str], deadline: float) -> tuple[str, str, str | None]:
        """Subject, agent name and (for registry routing) instance id of a route."""
        subjects = self.bus.subjects
        if route.agent is not None:
            return self._agent_subject(route.agent), route.agent, None
        if route.instance is not None:
            entry = self.view.get(route.instance) if self.view is not None else None
            return (
                subjects.instance(route.instance),
                entry.profile.name if entry else route.instance,
                None,
            )
        if self.view is None:
            raise NoCapableAgent("routing by capability needs a registry, and this runtime has none")
        if not self.view.ready.is_set():
            with anyio.move_on_after(min(_VIEW_READY_WAIT, max(0.0, deadline - self.clock()))):
                await self.view.ready.wait()
        chosen = self.view.best(route.capabilities, exclude=tried)
        if chosen is None:
            known = "" if self.view.ready.is_set() else " (the registry has not been reachable yet)"
            raise NoCapableAgent(
                f"no live instance offers {', '.join(route.capabilities)}{known}",
                details={"capabilities": list(route.capabilities)},
            )
        return subjects.instance(chosen.agent_id), chosen.profile.name, chosen.agent_id

    async def _notify(
        self,
        topic: str,
        params: dict[str, Any] | None,
        *,
        parent: Context | None = None,
        user_id: str | None = None,
    ) -> None:
        meta = self._new_metadata(parent, timeout=self.settings.default_timeout, priority=None, budget=None)
        env = NotificationEnvelope(
            message_id=new_id(),
            source_agent_id=parent.agent if parent else self.settings.client_name,
            target_agent_id=topic,
            conversation_id=parent.conversation_id if parent else new_id(),
            user_id=parent.user_id if parent else user_id,
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(action=topic, parameters=params),
            metadata=meta,
        )
        self.bus.stamp_hop(env)
        await self.bus.publish(self.bus.subjects.notify(topic), env)

    def _caller_record(
        self,
        env: RequestEnvelope,
        route: Route,
        instance: str | None,
        t0: float,
        error: A2AError,
        sent: bool,
    ) -> AuditRecord:
        """The caller's record of a call no callee answered (``sent``: the hop was stamped)."""
        meta = env.metadata
        elapsed = self.clock() - t0
        return AuditRecord(
            request_id=meta.correlation_id,
            conversation_id=env.conversation_id,
            origin=env.source_agent_id,
            target=str(env.target_agent_id),
            action=env.payload.action,
            outcome=outcome_of(error),
            side="caller",
            started_at=meta.timestamp,
            duration_ms=round(elapsed * 1000, 3),
            hop=meta.hop_count if sent else meta.hop_count + 1,
            depth=meta.depth,
            instance=instance,
            user_id=env.user_id,
            parent_id=meta.parent_id,
            routed_by=",".join(route.capabilities) or None,
            error_code=error.code,
            error_message=error.message,
            error_agent=error.agent,
        )

    # -- observing ---------------------------------------------------------------------

    async def subscribe_audit(self, handler: MessageHandler) -> Subscription:
        """Receive every audit record of this namespace (raw JSON messages)."""
        return await self.bus.transport.subscribe(self.bus.subjects.audit_all, handler)

    async def wait_for_agents(self, names: Sequence[str], *, timeout: float = 10.0) -> None:
        """Wait until the registry view has a live instance of every agent in ``names``.

        Raises:
            DeadlineExceeded: they did not all appear in time.
        """
        if self.view is None:
            raise NoCapableAgent("waiting for agents needs a registry")
        with anyio.move_on_after(timeout):
            while True:
                present = {e.profile.name for e in self.view.entries()}
                if set(names) <= present:
                    return
                await anyio.sleep(0.05)
        missing = set(names) - {e.profile.name for e in self.view.entries()}
        raise DeadlineExceeded(f"agents not registered within {timeout}s: {', '.join(sorted(missing))}")
