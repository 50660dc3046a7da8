"""Delegation (seeds 000 and 002): a task with only the context it needs, in sequence or in parallel.

The caller side is a mixin of :class:`a2a.Context` (``delegate``, ``chain``,
``fan_out``); :func:`finish_delegation` is the callee side, shaping a delegated task's
outcome and keeping its thread's history.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any, Protocol

import anyio

from bus.errors import A2AError, FanOutExceeded, InvalidParams, PermissionDenied, Unavailable
from bus.handoff import (
    ChatMessage,
    ContextFilter,
    Delegation,
    DelegationResult,
    FilteredContext,
    Grants,
    HandoffData,
)
from bus.ids import new_id
from bus.wire import NotificationEnvelope, Priority, RequestEnvelope, ResponseEnvelope

from ..delegation.redact import Redactor
from ..delegation.roster import AgentRules
from ..delegation.views import (
    DelegationResponse,
    DelegationStep,
    FanOutResult,
    GatherPolicy,
    as_delegation_result,
)
from ..stores.history import Interaction, preview
from .route import Target
from .services import Services

__all__ = ["Delegating", "finish_delegation"]


class _Scope(Protocol):
    """What delegation needs of the handler context it runs in."""

    request: RequestEnvelope | NotificationEnvelope
    tools_used: list[str]
    _children: int

    @property
    def services(self) -> Services: ...
    @property
    def agent(self) -> str: ...
    @property
    def hop(self) -> int: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def conversation_id(self) -> str: ...
    @property
    def thread_id(self) -> str | None: ...
    @property
    def rules(self) -> AgentRules: ...
    @property
    def budget_left(self) -> int | None: ...

    def _child_grants(
        self, allowed_tools: Sequence[str] | None, allow_nested_calls: bool
    ) -> Grants | None: ...

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
    ) -> ResponseEnvelope: ...

    async def _delegate(self, step: DelegationStep) -> tuple[DelegationResponse, A2AError | None]: ...


class Delegating:
    """``delegate``, ``chain`` and ``fan_out`` of a handler context."""

    __slots__ = ()

    async def delegate(
        self: _Scope,
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

    async def chain(self: _Scope, steps: Sequence[DelegationStep]) -> list[DelegationResponse]:
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
        self: _Scope,
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

    async def _delegate(self: _Scope, step: DelegationStep) -> tuple[DelegationResponse, A2AError | None]:
        services = self.services
        redactor = services.redactor
        correlation_id = new_id()
        start = services.clock()
        thread_id = step.thread_id if step.thread_mode == "reuse" else new_id()
        error: A2AError | None = None
        response: DelegationResponse
        try:
            if step.thread_mode == "reuse":
                if not step.thread_id:
                    raise InvalidParams("thread_mode 'reuse' needs the thread_id of an earlier delegation")
                await _check_thread_owner(self, step.thread_id)
            context = await _filtered_context(self, step) if step.context is not None else None
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
            response = DelegationResponse.from_response(raw, (services.clock() - start) * 1000, thread_id)
        except A2AError as exc:
            error = exc
            response = DelegationResponse.from_error(
                correlation_id, str(step.target), exc, (services.clock() - start) * 1000, thread_id
            )
        await _record(self, step, response)
        return response, error


async def _filtered_context(scope: _Scope, step: DelegationStep) -> FilteredContext:
    assert step.context is not None
    services = scope.services
    source = scope.thread_id or scope.conversation_id
    messages, summary = [], None
    if services.history is not None:
        await _check_owner(scope, source, "conversation")
        messages = await services.history.messages(source)
        if step.context.include_summary:
            summary = await services.history.summary(source)
    built = services.context_builder.build(
        messages,
        step.context,
        step.max_context_tokens,
        summary=summary,
        workspace_root=step.workspace,
    )
    redactor = services.redactor
    for message in built.messages:
        message.content = redactor.redact(message.content)
    built.summary = redactor.redact(built.summary) if built.summary else None
    # Redaction only shortens text, so the token total can only fall.
    built.total_tokens = services.context_builder.cost(built)
    return built


async def _check_thread_owner(scope: _Scope, thread_id: str) -> None:
    if scope.services.history is None:
        raise Unavailable("reusing a thread needs the history store (set REDIS_URL)")
    await _check_owner(scope, thread_id, "thread")


async def _check_owner(scope: _Scope, conversation_id: str, kind: str) -> None:
    """Only the owner's calls read a conversation that belongs to a user (a call without a user none)."""
    history = scope.services.history
    assert history is not None
    owner = await history.owner(conversation_id)
    if owner is not None and owner != scope.user_id:
        raise PermissionDenied(
            f"{kind} {conversation_id} belongs to "
            + ("another user" if scope.user_id is not None else "a user, and this call has none"),
            agent=scope.agent,
            details={f"{kind}Id": conversation_id},
        )


async def _record(scope: _Scope, step: DelegationStep, response: DelegationResponse) -> None:
    services = scope.services
    history = services.history
    if history is None:
        return
    interaction = Interaction(
        caller=scope.agent,
        target=response.target_employee,
        task=preview(services.redactor.redact(step.task)),
        output_preview=preview(
            services.redactor.redact(response.result or response.summary or (response.error or ""))
        ),
        success=response.status == "success",
        duration_ms=round(response.duration_ms, 3),
        request_id=response.request_id,
        at=time.time(),
        thread_id=response.child_session_id,
        error_code=response.error_code,
        tokens_used=response.token_usage.total,
    )
    try:
        await history.record(scope.conversation_id, interaction)
    except Unavailable as exc:
        services.log_degraded(f"sub-agent interaction not recorded: {exc}")


def _redact_handoff(redactor: Redactor, handoff: HandoffData | None) -> HandoffData | None:
    if handoff is None:
        return None
    return HandoffData(
        facts=[redactor.redact(f) for f in handoff.facts] if handoff.facts else handoff.facts,
        references=handoff.references,
        intermediate_results=redactor.redact_value(handoff.intermediate_results),
    )


async def finish_delegation(
    services: Services,
    agent: str,
    request: RequestEnvelope | NotificationEnvelope,
    value: Any,
    tools: list[str],
) -> DelegationResult:
    """Callee side: shape a delegated task's outcome as a DelegationResult and keep the thread's history."""
    result = as_delegation_result(value)
    if not result.tool_calls and tools:
        result.tool_calls = list(tools)
    d = request.delegation
    history = services.history
    if d is not None and d.thread_id and history is not None:
        now = time.time()
        await history.append(
            d.thread_id,
            ChatMessage(role="user", name=request.source_agent_id, content=d.task, created_at=now),
            ChatMessage(
                role="assistant", name=agent, content=result.result or result.summary, created_at=now
            ),
        )
    return result
