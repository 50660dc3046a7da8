"""The caller side of a call: lineage, routing, caller checks, retries, caller audit.

CallPath.request(target, action, params, options, parent=ctx)
  lineage     the new request's metadata: depth, chain, deadline, budget, hop of its parent
  params      redacted unless the call, its agent or the runtime turned that off
  routing     by name, by instance, or the best instance from the registry view
  checks      depth, roster (may the caller invoke the target), cycles, objectives in progress
  bus         Bus.request stamps the hop and sends; NO_RESPONDERS from a routed
              instance that has just died tries the next best one
  audit       a caller record when no callee answered
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from typing import Any, Protocol

import anyio
import msgspec

from bus import Bus
from bus.errors import A2AError, DeadlineExceeded, InvalidParams, NoResponders
from bus.ids import new_id
from bus.limits import check_cycle, check_depth
from bus.wire import (
    PROTOCOL_VERSION,
    Metadata,
    NotificationEnvelope,
    Payload,
    RequestEnvelope,
    ResponseEnvelope,
)
from discovery import LocalView

from ..delegation.roster import AgentRules
from ..stores.audit import caller_record
from .grants import GrantIssuer
from .objectives import Objectives
from .options import DEFAULT, CallOptions
from .redaction import ParamRedaction
from .retry import retried
from .route import Route, Target, as_route, resolve
from .services import Services
from .settings import Settings

__all__ = ["CallPath", "Parent"]

# How long routing by capability waits for the first registry snapshot.
VIEW_READY_WAIT = 2.0
# Instances tried when a capability-routed call finds nobody serving the chosen one
# (each attempt costs one round trip to the server: "no responders" comes at once).
ROUTE_ATTEMPTS = 8


class Parent(Protocol):
    """The handling a call is made from (a :class:`a2a.Context`): the call's lineage."""

    @property
    def agent(self) -> str: ...
    @property
    def request(self) -> RequestEnvelope | NotificationEnvelope: ...
    @property
    def deadline(self) -> float: ...
    @property
    def rules(self) -> AgentRules: ...
    @property
    def redact_params(self) -> bool | None: ...


class CallPath:
    """Builds, checks, routes and sends requests for a runtime and the handlers it hosts."""

    def __init__(
        self,
        bus: Bus,
        services: Services,
        settings: Settings,
        view: LocalView | None,
        grants: GrantIssuer | None = None,
    ) -> None:
        self.bus = bus
        self.services = services
        self.settings = settings
        self.view = view
        self.grants = grants
        # Proven senders: calls from outside any agent name the identity this runtime connected as.
        self.client = bus.subjects.sender if settings.proven else settings.client_name
        self._caller = bus.caller
        bus.link.peer_protocol = settings.peer_protocol  # the form of requests and audit records
        bus.caller.forms.readers = view  # in "auto", who reads the compact form (bus.forms)
        self._subjects = bus.subjects
        self._objectives = Objectives(settings.objective_window)
        self._redaction = ParamRedaction(services, settings.redact_params)

    def request(
        self, target: Target, action: str, params: dict[str, Any] | None, options: CallOptions = DEFAULT,
        *, parent: Parent | None = None, fan_out: int | None = None,
    ) -> Coroutine[Any, Any, ResponseEnvelope]:  # fmt: skip
        """Send one request and return its response (again, as ``options.retry`` says).

        Without a retry this is the hot path's own coroutine, not one more around it."""
        retry = options.retry
        if retry is None:
            return self._request(target, action, params, options, parent=parent, fan_out=fan_out)
        limit = self.settings.default_timeout if options.timeout is None else options.timeout
        if parent is None and options.correlation_id is None:  # every attempt in one call tree
            tree = new_id()
            options = msgspec.structs.replace(
                options, correlation_id=tree, conversation_id=options.conversation(tree)
            )

        def attempt(given: CallOptions) -> Coroutine[Any, Any, ResponseEnvelope]:
            return self._request(target, action, params, given, parent=parent, fan_out=fan_out)

        return retried(retry, options, limit, self.services.clock, attempt)

    async def _request(
        self, target: Target, action: str, params: dict[str, Any] | None, options: CallOptions, *,
        parent: Parent | None, fan_out: int | None,
    ) -> ResponseEnvelope:  # fmt: skip
        """Send one request and return its response.

        ``fan_out`` is how many children the parent has in flight, this one included.

        This is the caller's hot path, written flat (one coroutine from here to the bus):
        the envelope is built once with this hop counted and the time left, each check
        runs only under the condition in which it can refuse, and a retry on another
        instance sends a copy of the envelope with the new target.

        Raises:
            A2AError: the typed error the call ended with, located at the agent and hop
                where it happened.
        """
        route = as_route(target)
        services = self.services
        clock = services.clock
        t0 = clock()
        limit = self.settings.default_timeout if options.timeout is None else options.timeout
        if parent is not None:
            limit = min(limit, parent.deadline - t0)
        meta = self._metadata(parent, options, limit if limit > 0 else 0.0, fan_out=fan_out)
        source = parent.agent if parent is not None else self.client
        env = self._envelope(route, action, params, options, parent, meta)
        delegation = options.delegation
        hop = meta.hop_count - 1  # the caller's own hop: where a refusal here happened
        instance: str | None = None
        objective: str | None = None
        sent = False  # the current attempt reached the bus (its hop counts)
        attempts = 0
        trace = services.telemetry.call(env, route)
        try:
            try:
                if limit <= 0:
                    raise DeadlineExceeded("no time left for this call: the parent's deadline has passed")
                if meta.depth >= meta.max_depth:
                    check_depth(meta)
                deadline = t0 + limit
                tried: set[str] = set()
                if route.capabilities and self.view is not None and not self.view.follows(route.capabilities):
                    # The view's first snapshot (waited for a little), and these capabilities' instances.
                    with anyio.move_on_after(max(0.0, deadline - clock())):
                        await self.view.follow(route.capabilities, ready_wait=VIEW_READY_WAIT)
                while True:
                    if route.agent is not None:
                        name = route.agent
                        subject = self._subjects.agent(name)
                    else:
                        subject, name, instance = self._resolve(route, tried, parent)
                        if attempts:
                            env = msgspec.structs.replace(env, target_agent_id=name)
                        else:  # not sent yet: still this call's own envelope
                            env.target_agent_id = name
                    self._check(meta, source, name)
                    if delegation is not None and delegation.objective and objective is None:
                        objective = self._objectives.start(env, name)
                    headers = trace.sending(subject, name)
                    left = deadline - clock()
                    if attempts:  # another attempt: its own envelope, with the time now left
                        meta = msgspec.structs.replace(meta, ttl_ms=max(0, int(left * 1000)))
                        env = msgspec.structs.replace(env, metadata=meta)
                    attempts += 1
                    sent = True
                    try:
                        compact = self._caller.forms.choose(name, instance or route.instance)
                        response = await self._caller.request(
                            subject, env, timeout=left, headers=headers, on_progress=options.on_progress,
                            compact=compact,
                        )  # fmt: skip
                        break
                    except NoResponders:
                        if instance is None or self.view is None:
                            raise
                        # Nobody serves the chosen instance (it died since the view last heard
                        # of it, or it never existed): routing forgets it and tries the next best.
                        self.view.drop(instance)
                        tried.add(instance)
                        if len(tried) >= ROUTE_ATTEMPTS:
                            raise
                        sent = False
            except A2AError as exc:
                if sent:
                    exc.located(name if exc.remote else source, hop + 1)
                else:
                    exc.agent, exc.hop = exc.agent or source, hop
                if not exc.remote:
                    services.audit.emit(
                        caller_record(env, route.capabilities, instance, clock() - t0, exc, hop + 1)
                    )
                trace.ended(exc)
                raise
            finally:
                if objective is not None:
                    self._objectives.end(objective)
            if objective is not None:  # answered: the same objective again soon is a loop
                self._objectives.done(objective)
            trace.ended(None, response.payload.result)
            return response
        finally:
            trace.close()

    def _envelope(
        self,
        route: Route,
        action: str,
        params: dict[str, Any] | None,
        options: CallOptions,
        parent: Parent | None,
        meta: Metadata,
    ) -> RequestEnvelope:
        """A new request with ``meta``: this call's lineage, user and rights, and ``params`` redacted."""
        source = parent.agent if parent is not None else self.client
        # From outside any agent (a user's script, the CLI, the gateway with a user's own
        # message) the parameters are the user's, for the agent the user chose: sent as
        # given unless the call asks. An agent's calls pass data on: redacted by default.
        choice = parent.redact_params if parent is not None else False
        params = self._redaction.apply(params, source, options.redact_params, choice)
        env = RequestEnvelope(
            message_id=new_id(),
            source_agent_id=source,
            target_agent_id=list(route.each) if route.each else route.agent or str(route),
            conversation_id=options.conversation(meta.correlation_id)
            if parent is None
            else parent.request.conversation_id,
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(action=action, parameters=params),
            metadata=meta,
        )
        if parent is not None:  # the parent's user and grant, unchanged (an agent cannot sign one)
            env.user_id = parent.request.user_id
            env.user_grant = parent.request.user_grant
        elif options.user_id is not None:
            env.user_id = options.user_id
            env.user_grant = self._grant(options.user_id, env.conversation_id)
        if route.capabilities:
            env.required_capabilities = list(route.capabilities)
        if options.grants is not None:
            env.grants = options.grants
        if options.delegation is not None:
            env.delegation = options.delegation
        if options.orchestration is not None:
            env.orchestration = options.orchestration
        return env

    def task_request(
        self,
        route: Route,
        action: str,
        params: dict[str, Any] | None,
        options: CallOptions,
        timeout: float,
        parent: Parent | None = None,
    ) -> tuple[RequestEnvelope, str]:
        """The request of a durable task, and the agent whose queue takes it (by capability:
        the agent of the best instance now); from a handler (``parent``), its child as a
        call would be, checked as a call is (``timeout`` within the parent's time left).

        Raises:
            A2AError: INVALID_PARAMS for one instance (a task goes to an agent),
                NO_CAPABLE_AGENT, or a caller's check (MAX_DEPTH_EXCEEDED, PERMISSION_DENIED...).
        """
        if route.instance is not None:
            raise InvalidParams("a durable task goes to an agent or a capability, not to one instance")
        agent = route.agent if route.agent is not None else self._resolve(route, set(), parent)[1]
        meta = self._metadata(parent, options, timeout)
        if parent is not None:
            if meta.depth >= meta.max_depth:
                check_depth(meta)
            self._check(meta, parent.agent, agent)
        env = self._envelope(route, action, params, options, parent, meta)
        env.target_agent_id = agent
        return env, agent

    def _check(self, meta: Metadata, source: str, target: str) -> None:
        """The caller's checks of a child request: the roster's rights, then cycles."""
        if meta.depth:
            self.services.policy.check_call(source, target)
        if target in meta.call_chain:
            check_cycle(meta, target)

    def _metadata(
        self,
        parent: Parent | None,
        options: CallOptions,
        timeout: float,
        *,
        fan_out: int | None = None,
        batch_replies: bool = True,
    ) -> Metadata:
        """A new request's metadata, counting its hop: fresh for a call from outside, inherited otherwise."""
        now = int(time.time() * 1000)
        ttl_ms = int(timeout * 1000)
        priority, budget, correlation_id = options.priority, options.budget, options.correlation_id
        if parent is None:
            s = self.settings
            meta = Metadata(  # a first hop: its correlation id names it, unless it has one given
                timestamp=now,
                correlation_id=correlation_id or options.request_id or new_id(),
                request_id=(options.request_id or new_id()) if correlation_id else None,
                hop_count=1,
                max_hops=s.max_hops,
                max_depth=s.max_depth,
                ttl_ms=ttl_ms,
                deadline=now + ttl_ms,
                batch_replies=batch_replies,
            )
            if priority is not None:
                meta.priority = priority
            if budget is not None:
                meta.budget = budget
        else:
            pm = parent.request.metadata
            rules = parent.rules
            depth = pm.depth + 1
            # Never deeper than the parent allowed, nor than the calling agent's own limit; a
            # callee that may not delegate gets a limit its own calls would reach at once.
            max_depth = min(pm.max_depth, rules.max_depth)
            if options.grants is not None and not options.grants.allow_nested_calls:
                max_depth = min(max_depth, depth + 1)
            meta = Metadata(
                timestamp=now,
                correlation_id=correlation_id or pm.correlation_id,
                request_id=options.request_id or new_id(),
                hop_count=pm.hop_count + 1,
                max_hops=pm.max_hops,
                priority=priority or pm.priority,
                ttl_ms=ttl_ms,
                deadline=now + ttl_ms,
                depth=depth,
                max_depth=max_depth,
                call_chain=[*pm.call_chain, parent.agent],
                budget=budget if budget is not None else pm.budget,
                parent_id=pm.key,
                fan_out=fan_out,
                max_fan_out=rules.max_fan_out,
                batch_replies=batch_replies,
            )
        if options.max_hops is not None and options.max_hops < meta.max_hops:
            meta.max_hops = max(1, options.max_hops)  # a caller may only lower it
        return meta

    def _resolve(self, route: Route, tried: set[str], parent: Parent | None) -> tuple[str, str, str | None]:
        """Subject, agent name and (for registry routing) instance id of a route."""
        rules = parent.rules if parent is not None else None
        return resolve(route, self._subjects, self.view, tried, rules)

    def _grant(self, user_id: str | None, conversation_id: str) -> str | None:
        """A grant for a call from outside any agent, good for its conversation only."""
        if user_id is None or self.grants is None:
            return None
        return self.grants.grant(user_id, conversation_id)

    async def notify(
        self,
        topic: str,
        params: dict[str, Any] | None,
        *,
        parent: Parent | None = None,
        user_id: str | None = None,
    ) -> None:
        """Publish a notification (one hop more than its parent), its ``params`` redacted."""
        meta = self._metadata(parent, DEFAULT, self.settings.default_timeout, batch_replies=False)
        conversation = parent.request.conversation_id if parent else meta.correlation_id
        source = parent.agent if parent else self.client
        params = self._redaction.apply(params, source, parent.redact_params if parent else False)
        env = NotificationEnvelope(
            message_id=new_id(),
            source_agent_id=source,
            target_agent_id=topic,
            conversation_id=conversation,
            user_id=parent.request.user_id if parent else user_id,
            user_grant=parent.request.user_grant if parent else self._grant(user_id, conversation),
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(action=topic, parameters=params),
            metadata=meta,
        )
        await self.bus.publish(self.bus.subjects.notify(topic), env)
