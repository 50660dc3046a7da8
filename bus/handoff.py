"""Wire types a delegation carries inside the envelope (seeds 000 and 002).

A request may carry ``grants`` (rights the callee gets for this call, which only narrow
down a chain) and ``delegation`` (the task, its objective, the filtered context and
hand-off data); a delegated task's handler answers with a ``DelegationResult``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from ._struct import Wire

__all__ = [
    "Artifact",
    "ChatMessage",
    "ContextFilter",
    "Delegation",
    "DelegationResult",
    "FilteredContext",
    "Grants",
    "HandoffData",
    "SourceRef",
    "ThreadMode",
]

ThreadMode = Literal["new", "reuse"]


class Grants(Wire):
    """Rights of the callee for one call; a child's grants never exceed its parent's."""

    allowed_tools: list[str] | None = None
    """Tools the callee may use, intersected with its own; None leaves its own unchanged."""
    allow_nested_calls: bool = True
    """False: the callee may not delegate further."""


class ChatMessage(Wire):
    role: str
    content: str
    name: str | None = None
    created_at: float = 0.0
    """Seconds since the epoch."""


class ContextFilter(Wire):
    """What part of the caller's conversation the callee gets (seed 000)."""

    last_messages: Annotated[int, Meta(ge=0)] | None = None
    roles: list[str] | None = None
    keywords: list[str] | None = None
    include_summary: bool = False
    include_workspace: bool = False
    workspace_files: list[str] | None = None
    max_age_seconds: Annotated[int, Meta(ge=0)] | None = None


class FilteredContext(Wire):
    messages: list[ChatMessage] = []
    summary: str | None = None
    workspace: str | None = None
    total_tokens: int = 0


class SourceRef(Wire):
    owner_scope: str
    source_id: str
    relevance: float | None = None


class HandoffData(Wire):
    facts: list[str] | None = None
    references: list[SourceRef] | None = None
    intermediate_results: Any = None


class Delegation(Wire):
    """The delegated task: seed 002's DelegationRequest and seed 000's SubAgentArgs travel here."""

    task: str
    """The full instruction for the callee (seed 002 ``input``, seed 000 ``task``)."""
    objective: str = ""
    """Short goal; with origin and target it identifies duplicates in progress."""
    input: Any = None
    context: FilteredContext | None = None
    context_hints: list[str] = []
    handoff: HandoffData | None = None
    thread_mode: ThreadMode = "new"
    thread_id: str | None = None
    """The callee's conversation thread (seed 002 ``child_session_id``)."""
    max_context_tokens: int | None = None
    expected_outcome: str = ""
    """What the callee should produce or verify (seed 003); unlike ``objective``, never
    part of the cycle check, so different tasks may expect the same outcome."""


class Artifact(Wire):
    type: Literal["table", "json", "url", "id", "file"]
    value: Any
    label: str | None = None


class DelegationResult(Wire):
    """What a delegated task's handler returns (seed 002 response body, seed 000 output)."""

    summary: str = ""
    result: str = ""
    artifacts: list[Artifact] = []
    new_facts: list[str] = []
    used_sources: list[SourceRef] = []
    tool_calls: list[str] = []
    confidence: Annotated[int, Meta(ge=0, le=100)] | None = None
    requires_followup: bool = False
    status: Literal["success", "partial", "failed"] = "success"
    error: str | None = None
