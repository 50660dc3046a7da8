"""What a handler gets: the request, its deadline and rights, and calls that inherit its lineage."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from bus.errors import A2AError, BudgetExceeded, FanOutExceeded, PermissionDenied
from bus.handoff import Delegation, Grants
from bus.protocol import PROGRESS_BYTES
from bus.wire import NotificationEnvelope, Priority, RequestEnvelope, ResponseEnvelope, TokenUsage

from ..delegation.roster import AgentRules
from ..delegation.views import DelegationRequest
from .calls import CallPath
from .delegating import Delegating
from .route import Target
from .services import Services
from .slots import Lease

__all__ = ["Context", "Instance"]

log = logging.getLogger("a2a.agent")
_encode = msgspec.json.Encoder().encode


def _narrow(inherited: list[str] | None, requested: Sequence[str] | None) -> list[str] | None:
    """Tools allowed after a caller restricts them: never more than the caller had."""
    if requested is None:
        return inherited
    if inherited is None:
        return list(dict.fromkeys(requested))
    allowed = set(requested)
    return [t for t in inherited if t in allowed]


@dataclass(frozen=True, slots=True)
class Instance:
    """What every context of one hosted instance shares."""

    services: Services
    calls: CallPath
    agent: str
    instance_id: str
    progress: Callable[[str, bytes], Awaitable[None]]
    """Sends a progress update on a reply subject (the hosting endpoint's)."""


class Context(Delegating):
    """The handling of one request (or notification) by one agent instance.

    Calls made through the context are children of this request: they carry its
    conversation and user, one more hop and depth, this agent on the call chain, a
    deadline no later than this request's own, a share of its token budget, and rights
    (tools, nested calls) never wider than its own.
    """

    __slots__ = (
        "_children",
        "_instance",
        "_lease",
        "_reserved",
        "action",
        "deadline",
        "params",
        "request",
        "tools_used",
        "usage",
    )

    def __init__(
        self,
        instance: Instance,
        request: RequestEnvelope | NotificationEnvelope,
        deadline: float,
        action: str,
        params: dict[str, Any],
        lease: Lease | None = None,
    ) -> None:
        self.request = request
        self.deadline = deadline
        self.action = action
        """The name of the action being handled (or the notification's topic)."""
        self.params = params
        """Its parameters: ``payload.parameters``, or a delegation's structured ``input``."""
        self.usage = TokenUsage()
        """Tokens this handler and its settled children used; reported back with the result."""
        self.tools_used: list[str] = []
        self._instance = instance
        self._lease = lease
        self._reserved = 0
        self._children = 0

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
    def budget_left(self) -> int | None:
        """Tokens this handler may still spend or hand out; None when unlimited."""
        budget = self.request.metadata.budget
        if budget is None:
            return None
        return budget - self.usage.total - self._reserved

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
        self.usage.prompt += prompt
        self.usage.completion += completion
        self.usage.total += prompt + completion
        left = self.budget_left
        if left is not None and left < 0:
            raise BudgetExceeded(
                f"{self.agent} used {self.usage.total} tokens of a "
                f"{self.request.metadata.budget}-token budget",
                details={"used": self.usage.total, "budget": self.request.metadata.budget},
            )

    def _reserve(self, requested: int | None) -> tuple[int | None, int]:
        """A child call's budget, and how much of this handler's it holds until it settles.

        An explicit ``requested`` amount is held. Without one, the child may use all that
        is left but holds nothing: calls made in parallel (a framework running several
        tool calls at once) share what is left instead of the first taking it all. Such
        siblings may together spend more than was left; once settled, the overspend
        refuses this handler's next call and its next :meth:`report_usage`.
        """
        left = self.budget_left
        if left is None:
            return requested, 0
        if requested is None:
            if left <= 0:
                raise BudgetExceeded(
                    f"no budget left for a call: {self.usage.total} of {self.request.metadata.budget} used",
                    details={"left": left},
                )
            return left, 0
        if requested <= 0 or requested > left:
            raise BudgetExceeded(
                f"a call needing {requested} tokens cannot be paid for: {left} of the budget left",
                details={"requested": requested, "left": left},
            )
        self._reserved += requested
        return requested, requested

    def _settle(self, held: int, used: TokenUsage | None) -> None:
        self._reserved -= held
        if used is not None:
            self.usage.prompt += used.prompt
            self.usage.completion += used.completion
            self.usage.total += used.total

    async def progress(self, update: Any) -> None:
        """Tell the caller how the work goes (a JSON-serialisable value), before the result.

        The caller sees it when it asked to (``on_progress`` of :meth:`call` and
        :meth:`a2a.Runtime.request`; the A2A gateway streams it as a status update).
        Best effort: it never raises, and an update nobody listens to is dropped. An
        update that is not JSON-serialisable or larger than 16 KiB encoded is dropped
        and logged.
        """
        lease = self._lease
        if lease is None or not lease.reply:
            return  # a notification: nobody waits
        try:
            data = _encode(update)
        except (TypeError, ValueError, OverflowError) as exc:
            log.warning("%s: progress update dropped: %s", self.agent, exc)
            return
        if len(data) > PROGRESS_BYTES:
            log.warning("%s: progress update of %d bytes dropped", self.agent, len(data))
            return
        await self._instance.progress(lease.reply, data)

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
    ) -> Any:
        """Call another agent and return its result.

        ``target`` is an agent name, :func:`a2a.by_instance` or :func:`a2a.by_capability`.
        ``budget`` reserves tokens for the call (default: it may use all that is
        left, shared with calls made in parallel);
        ``allowed_tools`` narrows the callee's tools; ``allow_nested_calls=False``
        forbids it to delegate further; ``on_progress`` gets the callee's progress
        updates. While the call is out, this handler's concurrency slot is lent to
        other requests.

        Raises:
            A2AError: the typed error the call ended with.
        """
        response = await self._child(
            target,
            action,
            params,
            timeout=timeout,
            priority=priority,
            budget=budget,
            grants=self._child_grants(allowed_tools, allow_nested_calls),
            on_progress=on_progress,
        )
        return response.payload.result

    async def notify(self, topic: str, params: dict[str, Any] | None = None) -> None:
        """Publish a notification on ``topic``; no reply is awaited."""
        await self._instance.calls.notify(topic, params, parent=self)

    def _child_grants(self, allowed_tools: Sequence[str] | None, allow_nested_calls: bool) -> Grants | None:
        inherited = self.request.grants.allowed_tools if self.request.grants else None
        tools = _narrow(inherited, allowed_tools)
        if tools is None and allow_nested_calls:
            return None
        return Grants(allowed_tools=tools, allow_nested_calls=allow_nested_calls)

    async def _child(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None,
        priority: Priority | None,
        budget: int | None,
        grants: Grants | None,
        delegation: Delegation | None = None,
        correlation_id: str | None = None,
        on_progress: Callable[[Any], None] | None = None,
    ) -> ResponseEnvelope:
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
        reserved, held = self._reserve(budget)
        self._children += 1
        used: TokenUsage | None = None
        # While the call is out this handler's slot is lent to other requests, so agents
        # calling each other never starve one another.
        lent = self._lease is not None and self._lease.give_up()
        try:
            response = await self._instance.calls.request(
                target,
                action,
                params,
                parent=self,
                timeout=timeout,
                priority=priority,
                budget=reserved,
                grants=grants,
                delegation=delegation,
                fan_out=self._children,
                correlation_id=correlation_id,
                on_progress=on_progress,
            )
            used = response.payload.usage
            return response
        except A2AError as exc:
            used = exc.usage
            raise
        finally:
            self._children -= 1
            self._settle(held, used)
            if lent:
                assert self._lease is not None
                await self._lease.take()
