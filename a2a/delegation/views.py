"""The seeds' delegation shapes as typed views over the one A2A envelope.

Seed 002's ``DelegationRequest``/``DelegationResponse`` and seed 000's
``SubAgentArgs``/``SubAgentResult`` are not separate wire formats: each is built from
an envelope (and its response) and keeps the seed's field names, so it can be logged
or handed to code written against the seeds.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

import msgspec

from bus.errors import A2AError
from bus.handoff import (
    Artifact,
    ContextFilter,
    DelegationResult,
    FilteredContext,
    HandoffData,
    SourceRef,
    ThreadMode,
)
from bus.wire import RequestEnvelope, ResponseEnvelope, TokenUsage

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "Constraints",
    "DelegationRequest",
    "DelegationResponse",
    "DelegationStep",
    "FanOutResult",
    "GatherPolicy",
    "StepOptions",
    "SubAgentArgs",
    "SubAgentResult",
]

GatherPolicy = Literal["all", "first", "quorum"]

DEFAULT_CONTEXT_TOKENS = 4000
"""Seed 000's default for ``max_context_tokens``: the most tokens of context a delegation carries."""


class Constraints(msgspec.Struct, kw_only=True):
    max_tokens: int | None
    max_depth: int
    deadline_ms: int | None


class DelegationRequest(msgspec.Struct, kw_only=True):
    """Seed 002's request envelope, read from an A2A request."""

    request_id: str
    origin_employee: str
    target_employee: str
    user_id: str | None
    parent_session_id: str
    child_session_id: str | None
    objective: str
    input: str
    constraints: Constraints
    context_hints: list[str]
    handoff_data: HandoffData
    current_depth: int
    created_at: str
    context: FilteredContext | None = None
    expected_outcome: str = ""
    """What the callee should produce or verify (seed 003's third part of a delegation)."""

    @classmethod
    def from_envelope(cls, env: RequestEnvelope) -> DelegationRequest:
        d = env.delegation
        meta = env.metadata
        target = env.target_agent_id
        return cls(
            request_id=meta.key,
            origin_employee=env.source_agent_id,
            target_employee=target if isinstance(target, str) else ",".join(target),
            user_id=env.user_id,
            parent_session_id=env.conversation_id,
            child_session_id=d.thread_id if d else None,
            objective=d.objective if d else env.payload.action,
            input=d.task if d else "",
            constraints=Constraints(
                max_tokens=meta.budget, max_depth=meta.max_depth, deadline_ms=meta.ttl_ms
            ),
            context_hints=list(d.context_hints) if d else [],
            handoff_data=(d.handoff if d and d.handoff else HandoffData()),
            current_depth=meta.depth,
            created_at=datetime.datetime.fromtimestamp(meta.timestamp / 1000, datetime.UTC).isoformat(),
            context=d.context if d else None,
            expected_outcome=d.expected_outcome if d else "",
        )


class SubAgentArgs(msgspec.Struct, kw_only=True):
    """Seed 000's sub-agent tool arguments, read from an A2A request."""

    agent_name: str
    task: str
    context: FilteredContext | None
    input: Any
    max_context_tokens: int | None
    allowed_tools: list[str] | None
    allow_nested_calls: bool

    @classmethod
    def from_envelope(cls, env: RequestEnvelope) -> SubAgentArgs:
        d = env.delegation
        target = env.target_agent_id
        return cls(
            agent_name=target if isinstance(target, str) else ",".join(target),
            task=d.task if d else "",
            context=d.context if d else None,
            input=d.input if d else env.payload.parameters,
            max_context_tokens=d.max_context_tokens if d else None,
            allowed_tools=env.grants.allowed_tools if env.grants else None,
            allow_nested_calls=env.grants.allow_nested_calls if env.grants else True,
        )


class SubAgentResult(msgspec.Struct, kw_only=True):
    """Seed 000's result shape."""

    agent_name: str
    success: bool
    output: str
    tool_calls: list[str]
    tokens_used: int
    duration_seconds: float
    errors: list[str]


class DelegationResponse(msgspec.Struct, kw_only=True):
    """Seed 002's response envelope, from an A2A response (or the typed error a call ended with).

    ``error_code``, ``error_agent`` and ``error_hop`` add where a failure happened.
    """

    request_id: str
    target_employee: str
    summary: str
    result: str
    artifacts: list[Artifact]
    new_facts: list[str]
    used_sources: list[SourceRef]
    token_usage: TokenUsage
    duration_ms: float
    child_session_id: str | None
    confidence: int | None
    requires_followup: bool
    status: Literal["success", "partial", "failed"]
    error: str | None = None
    error_code: str | None = None
    error_agent: str | None = None
    error_hop: int | None = None
    tool_calls: list[str] = []

    @classmethod
    def from_response(
        cls, response: ResponseEnvelope, duration_ms: float, thread_id: str | None = None
    ) -> DelegationResponse:
        body = as_delegation_result(response.payload.result)
        return cls(
            request_id=response.metadata.key,
            target_employee=response.source_agent_id,
            summary=body.summary,
            result=body.result,
            artifacts=body.artifacts,
            new_facts=body.new_facts,
            used_sources=body.used_sources,
            token_usage=response.payload.usage or TokenUsage(),
            duration_ms=duration_ms,
            child_session_id=thread_id,
            confidence=body.confidence,
            requires_followup=body.requires_followup,
            status=body.status,
            error=body.error,
            tool_calls=body.tool_calls,
        )

    @classmethod
    def from_error(
        cls,
        request_id: str,
        target: str,
        error: A2AError,
        duration_ms: float,
        thread_id: str | None = None,
    ) -> DelegationResponse:
        return cls(
            request_id=request_id,
            target_employee=target,
            summary="",
            result="",
            artifacts=[],
            new_facts=[],
            used_sources=[],
            token_usage=error.usage or TokenUsage(),
            duration_ms=duration_ms,
            child_session_id=thread_id,
            confidence=None,
            requires_followup=False,
            status="failed",
            error=error.message,
            error_code=error.code,
            error_agent=error.agent,
            error_hop=error.hop,
        )

    def to_sub_agent_result(self) -> SubAgentResult:
        return SubAgentResult(
            agent_name=self.target_employee,
            success=self.status == "success",
            output=self.result or self.summary,
            tool_calls=list(self.tool_calls),
            tokens_used=self.token_usage.total,
            duration_seconds=self.duration_ms / 1000,
            errors=[f"{self.error_code}: {self.error}"]
            if self.error_code
            else ([self.error] if self.error else []),
        )


_RESULT_KEYS = {f.encode_name for f in msgspec.structs.fields(DelegationResult)}


def as_delegation_result(value: Any) -> DelegationResult:
    """A handler's return value as a DelegationResult (plain values become its ``result``)."""
    if isinstance(value, DelegationResult):
        return value
    if isinstance(value, dict) and value.keys() & _RESULT_KEYS:
        try:
            return msgspec.convert(value, DelegationResult)
        except msgspec.ValidationError:
            pass
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return DelegationResult(summary=text[:200], result=text)


@dataclass(frozen=True)
class DelegationStep:
    """One delegation of a chain or fan-out; fields as in :meth:`a2a.Context.delegate`."""

    target: Any
    task: str
    objective: str = ""
    action: str = "task"
    context: ContextFilter | None = None
    max_context_tokens: int = DEFAULT_CONTEXT_TOKENS
    workspace: str | None = None
    input: Any = None
    context_hints: Sequence[str] = ()
    handoff: HandoffData | None = None
    thread_mode: ThreadMode = "new"
    thread_id: str | None = None
    allowed_tools: Sequence[str] | None = None
    allow_nested_calls: bool = False
    budget: int | None = None
    timeout: float | None = None
    expected_outcome: str = ""


class StepOptions(TypedDict, total=False):
    """The fields of a :class:`DelegationStep` beside its target and task, as keywords of
    :meth:`a2a.Context.delegate` (same names, same defaults)."""

    objective: str
    action: str
    context: ContextFilter | None
    max_context_tokens: int
    workspace: str | None
    input: Any
    context_hints: Sequence[str]
    handoff: HandoffData | None
    thread_mode: ThreadMode
    thread_id: str | None
    allowed_tools: Sequence[str] | None
    allow_nested_calls: bool
    budget: int | None
    timeout: float | None
    expected_outcome: str


@dataclass
class FanOutResult:
    """Responses of a parallel fan-out, in step order (None where a branch's result was not used)."""

    responses: list[DelegationResponse | None]
    dropped: int = 0
    """Branches cancelled or finished after the gather policy was met; their results were dropped."""
    policy: GatherPolicy = "all"
    succeeded: list[int] = field(default_factory=list)

    @property
    def successes(self) -> list[DelegationResponse]:
        return [r for r in self.responses if r is not None and r.status == "success"]
