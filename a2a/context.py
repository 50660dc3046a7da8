"""What a handler gets: the request, its deadline and rights, and calls that inherit its lineage."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from bus.errors import (
    A2AError,
    BudgetExceeded,
    FanOutExceeded,
    InvalidParams,
    PermissionDenied,
    Unavailable,
)
from bus.handoff import ContextFilter, Delegation, FilteredContext, Grants, HandoffData
from bus.ids import new_id
from bus.wire import NotificationEnvelope, Priority, RequestEnvelope, ResponseEnvelope, TokenUsage

from .agent import Action
from .delegation import (
    DelegationRequest,
    DelegationResponse,
    DelegationStep,
    FanOutResult,
    GatherPolicy,
)
from .history import Interaction, preview
from .roster import AgentRules
from .route import Target

if TYPE_CHECKING:
    from ._host import AgentHost
    from .runtime import Runtime

__all__ = ["Context"]


def _narrow(inherited: list[str] | None, requested: Sequence[str] | None) -> list[str] | None:
    """Tools allowed after a caller restricts them: never more than the caller had."""
    if requested is None:
        return inherited
    if inherited is None:
        return list(dict.fromkeys(requested))
    allowed = set(requested)
    return [t for t in inherited if t in allowed]


class Context:
    """The handling of one request (or notification) by one agent instance.

    Calls made through the context are children of this request: they carry its
    conversation and user, one more hop and depth, this agent on the call chain, a
    deadline no later than this request's own, a share of its token budget, and rights
    (tools, nested calls) never wider than its own.
    """

    def __init__(
        self,
        runtime: Runtime,
        host: AgentHost,
        request: RequestEnvelope | NotificationEnvelope,
        deadline: float,
    ) -> None:
        self.runtime = runtime
        self.host = host
        self.request = request
        self.deadline = deadline
        self.usage = TokenUsage()
        """Tokens this handler and its settled children used; reported back with the result."""
        self.tools_used: list[str] = []
        self.action: Action | None = None
        """The action being handled (set on admission)."""
        self.params: dict[str, Any] = {}
        """Its parameters: ``payload.parameters``, or a delegation's structured ``input``."""
        self._reserved = 0
        self._children = 0
        self._holds_slot = False

    # -- what this request is -------------------------------------------------------------

    @property
    def agent(self) -> str:
        return self.host.agent.name

    @property
    def instance_id(self) -> str:
        return self.host.instance_id

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
        return self.runtime.policy.rules(self.agent)

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
        return self.deadline - self.runtime.clock()

    # -- tools and tokens ---------------------------------------------------------------

    def authorize_tool(self, tool: str) -> None:
        """Check, where a tool is invoked, that this agent may use it in this call.

        Raises:
            PermissionDenied: the roster does not give the agent the tool, its mode
                forbids it, or a caller up the chain narrowed the call's tools.
        """
        self.runtime.policy.authorize_tool(self.agent, tool, self.request.grants)
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

    def _reserve(self, requested: int | None) -> int | None:
        left = self.budget_left
        if left is None:
            return requested
        amount = left if requested is None else requested
        if amount <= 0 or amount > left:
            raise BudgetExceeded(
                f"a call needing {amount} tokens cannot be paid for: {left} of the budget left",
                details={"requested": amount, "left": left},
            )
        self._reserved += amount
        return amount

    def _settle(self, reserved: int | None, used: TokenUsage | None) -> None:
        if reserved is not None and self.request.metadata.budget is not None:
            self._reserved -= reserved
        if used is not None:
            self.usage.prompt += used.prompt
            self.usage.completion += used.completion
            self.usage.total += used.total

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
    ) -> Any:
        """Call another agent and return its result.

        ``target`` is an agent name, :func:`a2a.by_instance` or :func:`a2a.by_capability`.
        ``budget`` reserves tokens for the call (default: all that is left);
        ``allowed_tools`` narrows the callee's tools; ``allow_nested_calls=False``
        forbids it to delegate further. While the call is out, this handler's
        concurrency slot is lent to other requests.

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
        )
        return response.payload.result

    async def notify(self, topic: str, params: dict[str, Any] | None = None) -> None:
        """Publish a notification on ``topic``; no reply is awaited."""
        await self.runtime._notify(topic, params, parent=self)

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
        reserved = self._reserve(budget)
        self._children += 1
        used: TokenUsage | None = None
        try:
            async with _LentSlot(self):
                response = await self.runtime._request(
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
                )
            used = response.payload.usage
            return response
        except A2AError as exc:
            used = exc.usage
            raise
        finally:
            self._children -= 1
            self._settle(reserved, used)

    # -- delegation (seeds 000 and 002) -------------------------------------------------

    async def delegate(
        self,
        target: Target,
        task: str,
        *,
        objective: str = "",
        action: str = "task",
        context: ContextFilter | None = None,
        max_context_tokens: int = 4000,
        workspace: str | None = None,
        input: Any = None,
        context_hints: Sequence[str] = (),
        handoff: HandoffData | None = None,
        thread_mode: str = "new",
        thread_id: str | None = None,
        allowed_tools: Sequence[str] | None = None,
        allow_nested_calls: bool = False,
        budget: int | None = None,
        timeout: float | None = None,
    ) -> DelegationResponse:
        """Delegate a task with only the context it needs; returns seed 002's response.

        The callee gets ``task`` and the part of this conversation ``context`` selects,
        fitted into ``max_context_tokens`` (files under ``workspace`` when the filter
        includes it), all redacted of PII. ``thread_mode="reuse"`` continues the callee
        thread ``thread_id`` of an earlier delegation. Nested calls are off by default
        (seed 000). The interaction is recorded once in the conversation history.

        Raises:
            A2AError: the typed error the delegation ended with.
        """
        step = DelegationStep(
            target=target,
            task=task,
            objective=objective,
            action=action,
            context=context,
            max_context_tokens=max_context_tokens,
            workspace=workspace,
            input=input,
            context_hints=context_hints,
            handoff=handoff,
            thread_mode=thread_mode,  # type: ignore[arg-type]
            thread_id=thread_id,
            allowed_tools=allowed_tools,
            allow_nested_calls=allow_nested_calls,
            budget=budget,
            timeout=timeout,
        )
        response, error = await self._delegate(step)
        if error is not None:
            raise error
        return response

    async def chain(self, steps: Sequence[DelegationStep]) -> list[DelegationResponse]:
        """Sequential delegation; each step gets the previous result as ``handoff.intermediate_results``.

        Raises:
            A2AError: the first failing step's error; ``details['completedSteps']`` says how far it got.
        """
        responses: list[DelegationResponse] = []
        for step in steps:
            if responses:
                previous = responses[-1]
                handoff = step.handoff or HandoffData()
                step = dataclasses.replace(
                    step,
                    handoff=HandoffData(
                        facts=handoff.facts,
                        references=handoff.references,
                        intermediate_results={
                            "from": previous.target_employee,
                            "summary": previous.summary,
                            "result": previous.result,
                            "artifacts": [a for a in previous.artifacts],
                        },
                    ),
                )
            response, error = await self._delegate(step)
            if error is not None:
                error.details.setdefault("completedSteps", len(responses))
                raise error
            responses.append(response)
        return responses

    async def fan_out(
        self,
        steps: Sequence[DelegationStep],
        *,
        gather: GatherPolicy = "all",
        quorum: int | None = None,
    ) -> FanOutResult:
        """Parallel delegation to several agents.

        ``gather``: ``all`` waits for every branch; ``first`` returns at the first
        success; ``quorum`` at ``quorum`` successes. Branches still running then are
        cancelled (across processes) and, like results arriving after that point,
        counted in ``dropped``. Failed branches appear as failed responses.

        Raises:
            FanOutExceeded: more branches than this agent's ``max_fan_out`` (nothing is sent).
        """
        limit = self.rules.max_fan_out - self._children
        if len(steps) > limit:
            raise FanOutExceeded(
                f"{len(steps)} parallel delegates exceed {self.agent}'s fan-out limit "
                f"of {self.rules.max_fan_out}",
                agent=self.agent,
                hop=self.hop,
                details={"fanOut": len(steps), "maxFanOut": self.rules.max_fan_out},
            )
        needed = {"all": len(steps), "first": 1, "quorum": quorum or len(steps)}[gather]
        left = self.budget_left
        if left is not None and any(s.budget is None for s in steps):
            share = left // max(1, len(steps))
            steps = [s if s.budget is not None else dataclasses.replace(s, budget=share) for s in steps]
        result = FanOutResult(responses=[None] * len(steps), policy=gather)
        finished = [False] * len(steps)
        decided = False

        async def branch(index: int, step: DelegationStep) -> None:
            nonlocal decided
            response, _ = await self._delegate(step)
            finished[index] = True
            if decided:
                result.dropped += 1  # arrived after the policy was met
                return
            result.responses[index] = response
            if response.status == "success":
                result.succeeded.append(index)
                if gather != "all" and len(result.succeeded) >= needed:
                    decided = True
                    tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            for index, step in enumerate(steps):
                tg.start_soon(branch, index, step)
        result.dropped += finished.count(False)
        return result

    async def _delegate(self, step: DelegationStep) -> tuple[DelegationResponse, A2AError | None]:
        runtime = self.runtime
        redactor = runtime.redactor
        correlation_id = new_id()
        start = runtime.clock()
        thread_id = step.thread_id if step.thread_mode == "reuse" else new_id()
        error: A2AError | None = None
        response: DelegationResponse
        try:
            if step.thread_mode == "reuse":
                if not step.thread_id:
                    raise InvalidParams("thread_mode 'reuse' needs the thread_id of an earlier delegation")
                await self._check_thread_owner(step.thread_id)
            context = await self._filtered_context(step) if step.context is not None else None
            delegation = Delegation(
                task=redactor.redact(step.task),
                objective=redactor.redact(step.objective),
                input=redactor.redact_value(step.input),
                context=context,
                context_hints=list(step.context_hints),
                handoff=_redact_handoff(redactor, step.handoff),
                thread_mode=step.thread_mode,
                thread_id=thread_id,
                max_context_tokens=step.max_context_tokens,
            )
            raw = await self._child(
                step.target,
                step.action,
                None,
                timeout=step.timeout,
                priority=None,
                budget=step.budget,
                grants=self._child_grants(step.allowed_tools, step.allow_nested_calls),
                delegation=delegation,
                correlation_id=correlation_id,
            )
            response = DelegationResponse.from_response(raw, (runtime.clock() - start) * 1000, thread_id)
        except A2AError as exc:
            error = exc
            response = DelegationResponse.from_error(
                correlation_id, str(step.target), exc, (runtime.clock() - start) * 1000, thread_id
            )
        await self._record(step, response)
        return response, error

    async def _filtered_context(self, step: DelegationStep) -> FilteredContext:
        assert step.context is not None
        runtime = self.runtime
        source = self.thread_id or self.conversation_id
        messages, summary = [], None
        if runtime.history is not None:
            messages = await runtime.history.messages(source)
            if step.context.include_summary:
                summary = await runtime.history.summary(source)
        built = runtime.context_builder.build(
            messages,
            step.context,
            step.max_context_tokens,
            summary=summary,
            workspace_root=step.workspace,
        )
        redactor = runtime.redactor
        for message in built.messages:
            message.content = redactor.redact(message.content)
        built.summary = redactor.redact(built.summary) if built.summary else None
        # Redaction only shortens text, so the token total can only fall.
        built.total_tokens = runtime.context_builder.cost(built)
        return built

    async def _check_thread_owner(self, thread_id: str) -> None:
        history = self.runtime.history
        if history is None:
            raise Unavailable("reusing a thread needs the history store (set REDIS_URL)")
        owner = await history.owner(thread_id)
        if owner is not None and owner != self.user_id:
            raise PermissionDenied(
                f"thread {thread_id} belongs to another user",
                agent=self.agent,
                details={"threadId": thread_id},
            )

    async def _record(self, step: DelegationStep, response: DelegationResponse) -> None:
        history = self.runtime.history
        if history is None:
            return
        interaction = Interaction(
            caller=self.agent,
            target=response.target_employee,
            task=preview(self.runtime.redactor.redact(step.task)),
            output_preview=preview(response.result or response.summary or (response.error or "")),
            success=response.status == "success",
            duration_ms=round(response.duration_ms, 3),
            request_id=response.request_id,
            at=time.time(),
            thread_id=response.child_session_id,
            error_code=response.error_code,
            tokens_used=response.token_usage.total,
        )
        try:
            await history.record(self.conversation_id, interaction)
        except Unavailable as exc:
            self.runtime.log_degraded(f"sub-agent interaction not recorded: {exc}")


def _redact_handoff(redactor: Any, handoff: HandoffData | None) -> HandoffData | None:
    if handoff is None:
        return None
    return HandoffData(
        facts=[redactor.redact(f) for f in handoff.facts] if handoff.facts else handoff.facts,
        references=handoff.references,
        intermediate_results=redactor.redact_value(handoff.intermediate_results),
    )


class _LentSlot:
    """Releases the handler's concurrency slot for the duration of an outgoing call."""

    __slots__ = ("ctx", "lent")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lent = False

    async def __aenter__(self) -> None:
        if self.ctx._holds_slot:
            self.ctx.host.slots.release()
            self.ctx._holds_slot = False
            self.lent = True
            self.ctx.host._check_status()

    async def __aexit__(self, *exc: object) -> None:
        if self.lent:
            await self.ctx.host.slots.acquire()
            self.ctx._holds_slot = True
            self.ctx.host._check_status()
