"""The runtime: the composition root that connects, hosts agents and makes calls.

Runtime
  bus        (bus)        both halves of the delivery protocol over NATS
  view       (discovery)  the registry as this process sees it, kept fresh by events
  calls      CallPath     the caller side of every call, from here or from a handler
  hosts      AgentHost    one per agent served here
  presence   Presence     registration and heartbeats of those hosts
  services   Services     policy, redactor, context builder, telemetry, audit, history, clock
"""

from __future__ import annotations

import asyncio
import logging
import signal
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio

from bus import Bus
from bus.errors import Unavailable
from bus.tasks import loop_clock
from bus.wire import Priority, ResponseEnvelope
from discovery import LocalView, MemoryRegistry, Registry
from transports import MessageHandler, Subscription, Transport, TransportError
from transports.durable import DurableStore

from ..delegation.context_builder import ContextBuilder
from ..delegation.policy import Policy
from ..delegation.redact import Redactor
from ..observability.health import serve_health
from ..observability.telemetry import Telemetry
from ..stores.audit import AuditLog
from ..stores.capture import HistoryRecorder, Summariser
from ..stores.facts import FactStore
from ..stores.history import HistoryStore
from .agent import Agent
from .calls import CallPath
from .connect import bus_events, connect_nats
from .durable import Tasks, open_tasks
from .each import gather_each, group_of, one_tree
from .grants import GrantIssuer
from .guard import Guard
from .hosting import AgentHost
from .options import CallOptions, merged
from .presence import Presence
from .route import Target
from .running import announce_running
from .services import Services
from .settings import Settings

__all__ = ["Runtime"]

log = logging.getLogger("a2a.runtime")


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

    A call to an agent this runtime hosts is handed over in-process (seed 004's
    ``routeLocally``), with the very same checks, limits, deadlines and audit.

    Args:
        settings: connection settings and default limits (``Settings.from_env()`` if omitted).
        transport: use this transport instead of connecting to ``settings.nats_url``
            (for example a ``MemoryTransport`` in unit tests); the runtime closes it. It
            reports refused permissions and reconnections to the events it was made with,
            not to this runtime: the calls of a NATS transport made so are not sent again
            after a reconnect.
        registry: use this registry instead of connecting to ``settings.redis_url`` (with
            neither, it routes by name only; with neither or a ``MemoryRegistry``, no history).
        policy: delegation rights checked on both sides of each hop (default: from
            the roster file ``settings.roster``, else everything allowed).
        redactor: PII rules applied before delegation and in audit records.
        context_builder: selects and fits delegated context; pass one with your
            model's token counter.
        telemetry: tracing and metrics (default: as the OTEL_* variables say; off when unset).
        summariser: writes conversation summaries (default deterministic; may be async: a model).
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
        durable: DurableStore | None = None,
        summariser: Summariser | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.id = uuid.uuid4().hex[:12]
        s = self.settings
        if policy is None:
            policy = Policy.from_file(s.roster) if s.roster else Policy(closed=s.credentials or not s.open)
        self.policy = policy
        self.guard = Guard.from_settings(s)
        self.grants = GrantIssuer(s.grant_seed) if s.grant_seed else None
        """Signs user grants for calls made here with a ``user_id`` (this process is an entry point)."""
        self.redactor = redactor or Redactor()
        self.context_builder = context_builder or ContextBuilder()
        self.telemetry = telemetry or Telemetry.from_env(f"a2a-{s.client_name}", redactor=self.redactor)
        self.hosts: dict[str, AgentHost] = {}
        self.registry: Registry | None = registry
        self.view: LocalView | None = None
        self.history: HistoryStore | None = None
        self.facts_store: FactStore | None = None
        self._transport = transport
        self._durable = durable
        self._summariser = summariser
        self.tasks: Tasks
        """Durable tasks (:class:`a2a.core.durable.Tasks`): on with ``settings.tasks`` or a
        ``durable`` store given, else each of its calls raises UNAVAILABLE."""
        self._stack: AsyncExitStack | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self.bus: Bus
        self.audit: AuditLog
        self.services: Services
        self.calls: CallPath
        self.presence: Presence  # these five once open

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
        clock = loop_clock(asyncio.get_running_loop())  # deadlines are on the event loop's clock
        stack.push_async_callback(_shielded, self.telemetry.aclose)
        if self._transport is None:
            try:
                events = bus_events(lambda: getattr(self, "bus", None))
                self._transport = await connect_nats(s, name=f"a2a-{self.id}", events=events)
            except TransportError as exc:
                raise Unavailable(str(exc)) from None
        stack.push_async_callback(_shielded, self._transport.aclose)
        if self.registry is None and s.redis_url:
            self.registry = Registry.from_url(
                s.redis_url,
                namespace=s.namespace,
                heartbeat_interval=s.heartbeat_interval,
                trust_floor=s.trust_floor,
            )
        if self.registry is not None:
            stack.push_async_callback(_shielded, self.registry.aclose)
            self.view = LocalView(self.registry, trust_floor=s.trust_floor, follow="used")
        if self.registry is not None and not isinstance(self.registry, MemoryRegistry):  # Redis keeps them
            redis, ns, window = self.registry.redis, s.namespace, s.objective_window
            self.history = HistoryStore(redis, ns, redactor=self.redactor, objective_window=window)
            self.facts_store = FactStore(redis, ns, redactor=self.redactor)
        self.bus = bus = Bus(
            self._transport,
            namespace=s.namespace,
            runtime_id=self.id,
            identity=s.name,
            max_payload=s.max_payload,
            strict=s.proven,
        )
        self.audit = AuditLog(bus.link, enabled=s.audit, redactor=self.redactor)
        await bus.start()
        stack.push_async_callback(_shielded, bus.aclose)
        await self.audit.ensure_stream()
        recorder = HistoryRecorder(self.history, self.redactor, self._summariser, enabled=s.history_capture)
        self.services = Services(
            policy=self.policy,
            redactor=self.redactor,
            context_builder=self.context_builder,
            telemetry=self.telemetry,
            audit=self.audit,
            history=self.history,
            clock=clock,
            guard=self.guard,
            facts=self.facts_store,
            recorder=recorder,
        )
        if self.policy.open:
            log.info("open deployment: no credentials and no roster, so any agent may call any other")
        self.calls = CallPath(bus, self.services, s, self.view, self.grants)
        self.tasks = await open_tasks(s, self._transport, self._durable, self.calls)
        self.presence = Presence(self.hosts, self.registry, self.view, clock=clock, telemetry=self.telemetry)
        self._tg = tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        tg.start_soon(bus.run)
        if self.view is not None:
            view = self.view
            self.telemetry.watch_registry(view.size)
            await tg.start(view.run)
            tg.start_soon(self.presence.run)
        if self.audit.enabled:
            tg.start_soon(self.audit.run)
            tg.start_soon(announce_running, self.hosts, self.audit, clock)
            stack.push_async_callback(_shielded, self.audit.flush)  # runs first on exit
        tg.start_soon(recorder.run)  # cancelled last, it writes what the stopped hosts handled

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._stack is not None
        try:
            with anyio.CancelScope(shield=True):
                await self.presence.stop(self.tasks.stop, grace=5.0 if exc is None else 0.5)
        finally:
            stack, self._stack = self._stack, None
            # The body's exception is not handed to the stack: the internal task group
            # would wrap it in an ExceptionGroup. It propagates unchanged instead.
            await stack.aclose()
        return None

    # -- hosting ---------------------------------------------------------------------

    async def serve(self, *agents: Agent) -> list[AgentHost]:
        """Start one instance of each agent in this process: subscribe, register, heartbeat."""
        started = []
        for agent in agents:
            if agent.name in self.hosts:
                raise ValueError(f"{agent.name} is already served by this runtime")
            if self.settings.proven and agent.name != self.bus.subjects.sender:
                # Its requests would carry a sender token that is not its name, and callees
                # refuse those: one NATS user per agent.
                raise ValueError(
                    f"cannot serve {agent.name!r} as NATS user {self.bus.subjects.sender!r}: "
                    "with credentials each agent runs as the NATS user named after it"
                )
            host = AgentHost(
                agent,
                bus=self.bus,
                services=self.services,
                calls=self.calls,
                runtime_id=self.id,
                on_state=self.presence.changed,
                tasks=self.tasks,
            )
            await host.start()
            assert self._tg is not None
            self.tasks.serve(host, self._tg)
            self.hosts[agent.name] = host
            started.append(host)
        await self.bus.transport.flush()  # the server has the subscriptions before the registry
        for host in started:  # names an instance a caller may find and call at once
            await self.presence.register(host)
        return started

    def health(self) -> dict[str, Any]:
        """Liveness and readiness, as the health endpoint reports them (see :meth:`Presence.health`)."""
        nats_up = self._transport is not None and self._transport.is_connected
        return self.presence.health(self.id, nats_up, self.settings.heartbeat_interval)

    async def serve_health(self, port: int, host: str = "0.0.0.0") -> int:
        """Serve /livez, /readyz and /healthz on ``port`` (0: any free port); returns the port."""
        assert self._tg is not None, "the runtime is not running"
        return int(await self._tg.start(serve_health, self.health, port, host))

    async def serve_forever(self) -> None:
        """Block until SIGINT or SIGTERM (then leaving ``async with`` shuts down cleanly)."""
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                log.info("received %s; shutting down", signal.Signals(signum).name)
                return

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
        on_progress: Callable[[Any], None] | None = None,
        redact_params: bool | None = None,
    ) -> Any:
        """Call an agent from outside any agent and return its result.

        ``target`` is as in :meth:`a2a.Context.call` (``to_each`` too); ``timeout`` is the
        call's deadline in seconds (default ``settings.default_timeout``);
        ``user_id`` is carried down the whole call chain; ``budget`` caps the tokens the
        call and everything it delegates may use; ``on_progress`` is called with each
        progress update the callee sends (:meth:`a2a.Context.progress`); ``params`` are the
        user's own and leave as given unless ``redact_params=True``. :meth:`request` takes
        every option at once (``CallOptions``, its ``retry`` too).

        Raises:
            A2AError: the typed error the call ended with.
        """
        options = CallOptions(
            timeout=timeout,
            user_id=user_id,
            conversation_id=conversation_id,
            priority=priority,
            budget=budget,
            on_progress=on_progress,
            redact_params=redact_params,
        )
        if (group := group_of(target)) is not None:
            shared = one_tree(options)
            return await gather_each(group, lambda one: self.calls.request(one, action, params, shared))
        response = await self.calls.request(target, action, params, options)
        return response.payload.result

    async def request(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None = None,
        options: CallOptions | None = None,
        *,
        timeout: float | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        priority: Priority | None = None,
        budget: int | None = None,
        on_progress: Callable[[Any], None] | None = None,
        correlation_id: str | None = None,
    ) -> ResponseEnvelope:
        """Like :meth:`call`, returning the whole response envelope (usage, hop, ids).

        ``options`` gives every option of the call at once (:class:`a2a.CallOptions`); the
        keywords, where given, override its fields. ``correlation_id`` names the call tree (a
        new random id by default), which every hop carries (unguessable: an entry point finds
        its hops in the audit by it). Only ``options`` has ``max_hops``, which lowers the hop
        limit of the whole call tree below ``settings.max_hops``.

        Raises:
            A2AError: the typed error the call ended with.
        """
        options = merged(
            options,
            timeout=timeout,
            user_id=user_id,
            conversation_id=conversation_id,
            priority=priority,
            budget=budget,
            on_progress=on_progress,
            correlation_id=correlation_id,
        )
        return await self.calls.request(target, action, params, options)

    async def notify(
        self, topic: str, params: dict[str, Any] | None = None, *, user_id: str | None = None
    ) -> None:
        """Publish a notification on ``topic`` from outside any agent."""
        await self.calls.notify(topic, params, user_id=user_id)

    # -- observing ---------------------------------------------------------------------

    async def subscribe_audit(self, handler: MessageHandler) -> Subscription:
        """Receive every audit record of this namespace (raw JSON messages)."""
        return await self.bus.link.subscribe(self.bus.subjects.audit_all, handler)

    async def facts(self, user_id: str, limit: int | None = None) -> list[str]:
        """What delegated agents learned about ``user_id`` (their ``new_facts``), newest first
        (UNAVAILABLE without a registry, where facts live, or with it down)."""
        if self.facts_store is None:
            raise Unavailable("facts are kept in Redis: configure REDIS_URL")
        return await self.facts_store.facts(user_id, limit)

    async def wait_for_agents(self, names: Sequence[str], *, timeout: float = 10.0) -> None:
        """Wait until the registry view has a live instance of every agent in ``names``.

        Raises:
            DeadlineExceeded: they did not all appear in time (NO_CAPABLE_AGENT: no registry).
        """
        await self.presence.wait_for(names, timeout)
