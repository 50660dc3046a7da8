"""What a handler gets: the request, its deadline and rights, and calls that inherit its lineage."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

import msgspec

from bus.durable import Attempt, LocalAttempt
from bus.errors import A2AError, FanOutExceeded, PermissionDenied, Unavailable
from bus.handoff import Grants
from bus.wire import NotificationEnvelope, Priority, RequestEnvelope, ResponseEnvelope, TokenUsage

from ..delegation.roster import AgentRules
from ..delegation.views import (
    DelegationRequest,
    DelegationResponse,
    DelegationStep,
    FanOutResult,
    GatherPolicy,
    StepOptions,
)
from .budget import Budget
from .delegating import Delegator
from .each import check_fan_out, gather_each, group_of
from .instance import ChildOptions, Instance
from .options import DEFAULT, CallOptions, narrowed
from .retry import Retry
from .route import Target
from .services import Services
from .slots import Lease
from .task_handle import Task

__all__ = ["Context"]


class Context:
    """The handling of one request (or notification) by one agent instance.

    Calls made through the context are children of this request: they carry its
    conversation and user, one more hop and depth, this agent on the call chain, a
    deadline no later than this request's own, a share of its token budget, and rights
    (tools, nested calls) never wider than its own.
    """

    # fmt: off
    __slots__ = ("_budget", "_children", "_delegating", "_instance", "_lease", "_task",
                 "action", "deadline", "params", "request", "tools_used")
    # fmt: on

    def __init__(
        self,
        instance: Instance,
        request: RequestEnvelope | NotificationEnvelope,
        deadline: float,
        action: str,
        params: dict[str, Any],
        lease: Lease | None = None,
        task: Attempt | None = None,
    ) -> None:
        self.request = request
        self.deadline = deadline
        self.action = action
        """The name of the action being handled (or the notification's topic)."""
        self.params = params
        """Its parameters: ``payload.parameters``, or a delegation's structured ``input``."""
        self.tools_used: list[str] = []
        self._instance = instance
        self._lease = lease
        self._budget: Budget | None = None  # made when first used: most handlers never do
        self._children = 0
        self._delegating: Delegator | None = None
        self._task: Attempt | LocalAttempt | None = task

    # -- what this request is -------------------------------------------------------------

    @property
    def services(self) -> Services:
        """The runtime's shared services (policy, history, redactor, ...), read-only."""
        return self._instance.services

    @property
    def agent(self) -> str:
        return self._instance.agent

    @property
    def instance_id(self) -> str:
        return self._instance.instance_id

    @property
    def redact_params(self) -> bool | None:
        """This agent's choice of redacting the parameters it sends (None: the runtime's)."""
        return self._instance.redact_params

    @property
    def user_id(self) -> str | None:
        return self.request.user_id

    @property
    def conversation_id(self) -> str:
        return self.request.conversation_id

    @property
    def correlation_id(self) -> str:
        return self.request.metadata.correlation_id

    @property
    def hop(self) -> int:
        return self.request.metadata.hop_count

    @property
    def depth(self) -> int:
        return self.request.metadata.depth

    @property
    def rules(self) -> AgentRules:
        return self.services.policy.rules(self.agent)

    @property
    def thread_id(self) -> str | None:
        """This handler's conversation thread when it runs a delegated task."""
        d = self.request.delegation
        return d.thread_id if d is not None else None

    @property
    def delegation(self) -> DelegationRequest | None:
        """The delegated task in seed 002's shape, when this request is a delegation."""
        if self.request.delegation is None or not isinstance(self.request, RequestEnvelope):
            return None
        return DelegationRequest.from_envelope(self.request)

    @property
    def task(self) -> Attempt | LocalAttempt:
        """The durable task attempt this handler runs (:class:`bus.durable.Attempt`); for a
        plain call, one attempt kept in memory (:class:`bus.durable.LocalAttempt`)."""
        if self._task is None:
            self._task = LocalAttempt()
        return self._task

    @property
    def budget_left(self) -> int | None:
        """Tokens this handler may still spend or hand out; None when unlimited."""
        return self.request.metadata.budget if self._budget is None else self._budget.left

    @property
    def usage(self) -> TokenUsage:
        """Tokens this handler and its settled children used; reported back with the result."""
        return self._account().usage

    @property
    def spent(self) -> TokenUsage | None:
        """What :attr:`usage` reports when it is not zero, else None."""
        budget = self._budget
        return budget.usage if budget is not None and budget.usage.total else None

    @property
    def calls_in_flight(self) -> int:
        """Calls this handler has made that have not ended yet."""
        return self._children

    def remaining(self) -> float:
        """Seconds left before this request's deadline."""
        return self.deadline - self.services.clock()

    # -- tools and tokens ---------------------------------------------------------------

    def authorize_tool(self, tool: str) -> None:
        """Check, where a tool is invoked, that this agent may use it in this call.

        Raises:
            PermissionDenied: the roster does not give the agent the tool, its mode
                forbids it, or a caller up the chain narrowed the call's tools.
        """
        self.services.policy.authorize_tool(self.agent, tool, self.request.grants)
        if tool not in self.tools_used:
            self.tools_used.append(tool)

    def report_usage(self, prompt: int = 0, completion: int = 0) -> None:
        """Add tokens this handler consumed; they travel back with the result.

        Raises:
            BudgetExceeded: the call's token budget is now overspent.
        """
        self._account().spend(self.agent, prompt, completion)

    async def progress(self, update: Any) -> None:
        """Tell the caller how the work goes (a JSON-serialisable value), before the result.

        The caller sees it when it asked to (``on_progress`` of :meth:`call` and
        :meth:`a2a.Runtime.request`; the A2A gateway streams it as a status update); a
        durable task's followers read it from its journal (:meth:`a2a.Task.events`).
        Best effort: it never raises, and an update nobody listens to is dropped. An
        update that is not JSON-serialisable or larger than 16 KiB encoded is dropped
        and logged.
        """
        lease = self._lease
        if lease is not None and lease.reply:  # a call: its caller may listen
            await self._instance.send_progress(lease.reply, update)
        elif self._task is not None:  # a durable task: its journal, for whoever follows it
            await self._task.progress(update)

    # -- calling other agents -----------------------------------------------------------

    async def call(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        priority: Priority | None = None,
        budget: int | None = None,
        allowed_tools: Sequence[str] | None = None,
        allow_nested_calls: bool = True,
        on_progress: Callable[[Any], None] | None = None,
        redact_params: bool | None = None,
        retry: Retry | None = None,
    ) -> Any:
        """Call another agent and return its result.

        ``target`` is an agent name, :func:`a2a.by_instance` or :func:`a2a.by_capability`;
        :func:`a2a.to_each` calls several agents at once and returns their results in a list
        (an agent's typed error in place of its result), within this agent's ``max_fan_out``.
        ``budget`` reserves tokens for the call (default: all that is left, shared with calls
        made in parallel); ``allowed_tools`` narrows the callee's tools; ``allow_nested_calls=False``
        forbids it to delegate further; ``on_progress`` gets the callee's progress updates.
        While the call is out, this handler's concurrency slot is lent to other requests.
        ``params`` leave redacted unless ``redact_params=False`` (default: this agent's, else
        the runtime's). ``retry`` (:class:`a2a.Retry`) sends it again after a safe error.

        Raises:
            A2AError: the typed error the call ended with.
        """
        options = CallOptions(
            timeout=timeout,
            priority=priority,
            budget=budget,
            grants=self.grants_for(allowed_tools, allow_nested_calls),
            on_progress=on_progress,
            redact_params=redact_params,
            retry=retry,
        )
        if (group := group_of(target)) is not None:
            check_fan_out(self.agent, self.hop, self._children, len(group.each), self.rules.max_fan_out)
            return await gather_each(group, lambda member: self.invoke(member, action, params, options))
        response = await self.invoke(target, action, params, options)
        return response.payload.result

    async def submit(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        timeout: float | None = None,
        max_attempts: int | None = None,
    ) -> Task:
        """Submit a durable task as this request's child (as :meth:`a2a.Runtime.tasks`'s
        ``submit``, with this call's lineage, user and rights): see :meth:`Tasks.submit_child`.

        Raises:
            Unavailable: durable tasks are off here.
        """
        if self._instance.tasks is None:
            raise Unavailable("durable tasks are off here: set A2A_TASKS=1 (JetStream is needed)")
        options = ChildOptions(key, timeout, max_attempts)
        return await self._instance.tasks.submit_child(self, target, action, params, options)

    async def notify(self, topic: str, params: dict[str, Any] | None = None) -> None:
        """Publish a notification on ``topic``; no reply is awaited."""
        await self._instance.calls.notify(topic, params, parent=self)

    def grants_for(self, allowed_tools: Sequence[str] | None, allow_nested_calls: bool) -> Grants | None:
        """The rights of a call this handler makes: never wider than its own."""
        inherited = self.request.grants.allowed_tools if self.request.grants else None
        tools = narrowed(inherited, allowed_tools)
        if tools is None and allow_nested_calls:
            return None
        return Grants(allowed_tools=tools, allow_nested_calls=allow_nested_calls)

    async def invoke(
        self, target: Target, action: str, params: dict[str, Any] | None, options: CallOptions = DEFAULT
    ) -> ResponseEnvelope:
        """Make a call as :meth:`call` does, with ``options`` whole, and return the whole response.

        The call is a child of this request (see the class); ``options.grants`` should come
        from :meth:`grants_for`, and ``options.budget`` is reserved from this handler's.

        Raises:
            A2AError: the typed error the call ended with.
        """
        if self.request.grants is not None and not self.request.grants.allow_nested_calls:
            raise PermissionDenied(
                f"{self.agent} may not delegate further: its caller disallowed nested calls",
                agent=self.agent,
                hop=self.hop,
            )
        limit = self.rules.max_fan_out
        if self._children >= limit:
            raise FanOutExceeded(
                f"{self.agent} already has {self._children} delegates in flight; the limit is {limit}",
                agent=self.agent,
                hop=self.hop,
                details={"fanOut": self._children + 1, "maxFanOut": limit},
            )
        budget = self._account()
        reserved, held = budget.reserve(options.budget)
        if reserved != options.budget:
            options = msgspec.structs.replace(options, budget=reserved)
        self._children += 1
        used: TokenUsage | None = None
        # While the call is out this handler's slot is lent to other requests, so agents
        # calling each other never starve one another.
        lent = self._lease is not None and self._lease.give_up()
        try:
            response = await self._instance.calls.request(
                target, action, params, options, parent=self, fan_out=self._children
            )
            used = response.payload.usage
            return response
        except A2AError as exc:
            used = exc.usage
            raise
        finally:
            self._children -= 1
            budget.settle(held, used)
            if lent:
                assert self._lease is not None
                await self._lease.take()

    # -- delegating (seeds 000 and 002) ---------------------------------------------------

    async def delegate(
        self, target: Target | DelegationStep, task: str = "", **step: Unpack[StepOptions]
    ) -> DelegationResponse:
        """Delegate a task with only the context it needs; returns seed 002's response.

        ``target`` is where the task goes, or a whole :class:`a2a.DelegationStep` (then the
        other arguments are not used); the keywords are the step's fields (``objective``,
        ``action="task"``, ``context``, ``max_context_tokens=4000``, ``workspace``, ``input``,
        ``context_hints``, ``handoff``, ``thread_mode="new"``, ``thread_id``,
        ``allowed_tools``, ``allow_nested_calls=False``, ``budget``, ``timeout``,
        ``expected_outcome``: what the callee should produce or verify). The callee gets
        ``task`` and the part of this conversation ``context`` selects, fitted into
        ``max_context_tokens`` (files under ``workspace`` when the filter includes it), all
        redacted of PII. ``thread_mode="reuse"`` continues the callee thread ``thread_id``
        of an earlier delegation. Nested calls are off by default (seed 000). The
        interaction is recorded once in the conversation history.

        A delegation either succeeds (``status`` ``"success"`` or ``"partial"``) or raises:
        a callee that answers ``status="failed"`` ends it as AGENT_ERROR from that callee,
        with the callee's ``error`` as the message.

        Raises:
            A2AError: the typed error the delegation ended with (AgentError when the
                callee reported ``status="failed"``).
        """
        if not isinstance(target, DelegationStep):
            target = DelegationStep(target=target, task=task, **step)
        return await self._delegator().delegate(target)

    async def chain(self, steps: Sequence[DelegationStep]) -> list[DelegationResponse]:
        """Sequential delegation; each step gets the previous result as ``handoff.intermediate_results``.

        Raises:
            A2AError: the first failing step's error (a step answering ``status="failed"``
                included, as AgentError); ``details['completedSteps']`` says how far it got.
        """
        return await self._delegator().chain(steps)

    async def fan_out(
        self, steps: Sequence[DelegationStep], *, gather: GatherPolicy = "all", quorum: int | None = None
    ) -> FanOutResult:
        """Parallel delegation to several agents.

        ``gather``: ``all`` waits for every branch; ``first`` returns at the first
        success; ``quorum`` at ``quorum`` successes. Branches still running then are
        cancelled (across processes) and, like results arriving after that point,
        counted in ``dropped``. Failed branches (a typed error, or a callee answering
        ``status="failed"``) appear as failed responses with their ``error_code``.

        Raises:
            FanOutExceeded: more branches than this agent's ``max_fan_out`` (nothing is sent).
        """
        return await self._delegator().fan_out(steps, gather, quorum)

    def _account(self) -> Budget:
        if self._budget is None:
            self._budget = Budget(self.request.metadata.budget)
        return self._budget

    def _delegator(self) -> Delegator:
        if self._delegating is None:
            self._delegating = Delegator(self)
        return self._delegating
