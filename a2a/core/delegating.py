"""Delegation (seeds 000 and 002): a task with only the context it needs, in sequence or in parallel.

The caller side is a :class:`Delegator`, which a handler context owns and which uses only
its public surface (:class:`Handling`); :func:`finish_delegation` is the callee side,
shaping a delegated task's outcome and keeping its thread's history.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any, Protocol

import anyio
import msgspec

from bus.errors import A2AError, AgentError, InvalidParams, PermissionDenied, Unavailable
from bus.handoff import (
    ChatMessage,
    Delegation,
    DelegationResult,
    FilteredContext,
    Grants,
    HandoffData,
)
from bus.ids import new_id
from bus.wire import NotificationEnvelope, RequestEnvelope, ResponseEnvelope

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
from .each import check_fan_out
from .options import CallOptions
from .route import Target
from .services import Services

__all__ = ["Delegator", "Handling", "finish_delegation"]


class Handling(Protocol):
    """The public surface of the handler context (:class:`a2a.Context`) a delegator works for."""

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
    @property
    def calls_in_flight(self) -> int: ...

    def grants_for(self, allowed_tools: Sequence[str] | None, allow_nested_calls: bool) -> Grants | None: ...

    async def invoke(
        self, target: Target, action: str, params: dict[str, Any] | None, options: CallOptions = ...
    ) -> ResponseEnvelope: ...


class Delegator:
    """Delegation for one handling: ``delegate``, ``chain`` and ``fan_out`` of :class:`a2a.Context`."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Handling) -> None:
        self._ctx = ctx

    async def delegate(self, step: DelegationStep) -> DelegationResponse:
        response, error = await self._delegate(step)
        if error is not None:
            raise error
        return response

    async def chain(self, steps: Sequence[DelegationStep]) -> list[DelegationResponse]:
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
        self, steps: Sequence[DelegationStep], gather: GatherPolicy, quorum: int | None
    ) -> FanOutResult:
        ctx = self._ctx
        rules = ctx.rules
        check_fan_out(ctx.agent, ctx.hop, ctx.calls_in_flight, len(steps), rules.max_fan_out)
        needed = {"all": len(steps), "first": 1, "quorum": quorum or len(steps)}[gather]
        left = ctx.budget_left
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
        ctx = self._ctx
        services = ctx.services
        redactor = services.redactor
        request_id = new_id()
        start = services.clock()
        thread_id = step.thread_id if step.thread_mode == "reuse" else new_id()
        error: A2AError | None = None
        response: DelegationResponse
        try:
            if step.thread_mode == "reuse":
                if not step.thread_id:
                    raise InvalidParams("thread_mode 'reuse' needs the thread_id of an earlier delegation")
                await _check_thread_owner(ctx, step.thread_id)
            context = await _filtered_context(ctx, step) if step.context is not None else None
            delegation = Delegation(
                task=redactor.redact(step.task),
                objective=redactor.redact(step.objective),
                input=redactor.redact_value(step.input),
                context=context,
                context_hints=list(step.context_hints),
                handoff=_redact_handoff(redactor, await _with_facts(ctx, step.handoff)),
                thread_mode=step.thread_mode,
                thread_id=thread_id,
                max_context_tokens=step.max_context_tokens,
                expected_outcome=redactor.redact(step.expected_outcome),
            )
            options = CallOptions(
                timeout=step.timeout,
                budget=step.budget,
                grants=ctx.grants_for(step.allowed_tools, step.allow_nested_calls),
                delegation=delegation,
                request_id=request_id,
            )
            raw = await ctx.invoke(step.target, step.action, None, options)
            response = DelegationResponse.from_response(raw, (services.clock() - start) * 1000, thread_id)
            if response.status == "failed":
                error = _reported_failure(response)
        except A2AError as exc:
            error = exc
            response = DelegationResponse.from_error(
                request_id, str(step.target), exc, (services.clock() - start) * 1000, thread_id
            )
        await _record(ctx, step, response)
        if error is None and response.new_facts:
            await _keep_facts(ctx, response.new_facts)
        return response, error


FACTS_HANDED = 20
"""A delegation that names no facts of its own is handed the user's latest this many at most."""


async def _with_facts(scope: Handling, handoff: HandoffData | None) -> HandoffData | None:
    """``handoff``, with the user's kept facts when it gives none (seed 002 ``handoff_data.facts``)."""
    facts_store = scope.services.facts
    if facts_store is None or scope.user_id is None or (handoff is not None and handoff.facts is not None):
        return handoff
    try:
        facts = await facts_store.facts(scope.user_id, FACTS_HANDED)
    except Unavailable as exc:
        scope.services.log_degraded(f"the user's facts not handed on: {exc}")
        return handoff
    if not facts:
        return handoff
    if handoff is None:
        return HandoffData(facts=facts)
    return msgspec.structs.replace(handoff, facts=facts)


async def _keep_facts(scope: Handling, facts: list[str]) -> None:
    """Keep what the delegate learned about the call's user (seed 002 ``new_facts``)."""
    facts_store = scope.services.facts
    if facts_store is None or scope.user_id is None:
        return
    try:
        await facts_store.add(scope.user_id, [f for f in facts if isinstance(f, str)])
    except Unavailable as exc:
        scope.services.log_degraded(f"new facts not kept: {exc}")


def _reported_failure(response: DelegationResponse) -> AgentError:
    """The error of a delegated task whose handler answered with ``status="failed"``: the
    callee ran and said it failed, which ends the delegation as AGENT_ERROR from the callee."""
    agent = response.target_employee
    error = AgentError(
        response.error or f"{agent} reported that the task failed, without saying why",
        agent=agent,
        details={"requestId": response.request_id, "reportedStatus": "failed"},
    )
    error.remote = True
    error.usage = response.token_usage
    response.error = error.message
    response.error_code = error.code
    response.error_agent = agent
    return error


async def _filtered_context(scope: Handling, step: DelegationStep) -> FilteredContext:
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


async def _check_thread_owner(scope: Handling, thread_id: str) -> None:
    if scope.services.history is None:
        raise Unavailable("reusing a thread needs the history store (set REDIS_URL)")
    await _check_owner(scope, thread_id, "thread")


async def _check_owner(scope: Handling, conversation_id: str, kind: str) -> None:
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


async def _record(scope: Handling, step: DelegationStep, response: DelegationResponse) -> None:
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
