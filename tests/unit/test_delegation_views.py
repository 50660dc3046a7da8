"""The seeds' request/result shapes are views over the one envelope."""

from __future__ import annotations

import msgspec
import pytest

from a2a import DelegationRequest, DelegationResponse, DelegationResult
from a2a.delegation import SubAgentArgs, as_delegation_result
from bus.errors import PermissionDenied
from bus.handoff import ContextFilter, Delegation, FilteredContext, Grants, HandoffData, SourceRef
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope, ResponseEnvelope, TokenUsage

REQUEST = RequestEnvelope(
    message_id="m1",
    source_agent_id="prime-boss",
    target_agent_id="byte-doc",
    conversation_id="sess-1",
    user_id="u-7",
    protocol_version=PROTOCOL_VERSION,
    payload=Payload(action="task"),
    metadata=Metadata(
        timestamp=1_700_000_000_000, correlation_id="req-1", ttl_ms=15000, depth=1, max_depth=2, budget=1200
    ),
    grants=Grants(allowed_tools=["read", "write"], allow_nested_calls=False),
    delegation=Delegation(
        task="User uploaded receipt.jpg - extract all fields",
        objective="Extract receipt data",
        context=FilteredContext(total_tokens=12),
        context_hints=["receipt", "ocr"],
        handoff=HandoffData(
            facts=["lives in Canada"],
            references=[SourceRef(owner_scope="u-7", source_id="doc-3", relevance=0.8)],
        ),
        thread_id="thread-9",
        max_context_tokens=6000,
        expected_outcome="merchant, date and total",
    ),
)


def test_seed_002_delegation_request_view() -> None:
    view = DelegationRequest.from_envelope(REQUEST)
    assert (view.request_id, view.origin_employee, view.target_employee) == (
        "req-1",
        "prime-boss",
        "byte-doc",
    )
    assert (view.user_id, view.parent_session_id, view.child_session_id) == ("u-7", "sess-1", "thread-9")
    assert (view.objective, view.input, view.current_depth) == (
        "Extract receipt data",
        REQUEST.delegation.task,
        1,
    )  # type: ignore[union-attr]
    assert (view.constraints.max_tokens, view.constraints.max_depth, view.constraints.deadline_ms) == (
        1200,
        2,
        15000,
    )
    assert view.context_hints == ["receipt", "ocr"] and view.handoff_data.facts == ["lives in Canada"]
    assert view.handoff_data.references == [SourceRef(owner_scope="u-7", source_id="doc-3", relevance=0.8)]
    assert view.expected_outcome == "merchant, date and total"
    assert view.created_at.startswith("2023-11-14T22:13:20")
    keys = set(msgspec.to_builtins(view))
    assert {"request_id", "origin_employee", "target_employee", "constraints", "handoff_data"} <= keys


def test_seed_000_sub_agent_args_view() -> None:
    args = SubAgentArgs.from_envelope(REQUEST)
    assert args.agent_name == "byte-doc" and args.task.startswith("User uploaded")
    assert args.allowed_tools == ["read", "write"] and args.allow_nested_calls is False
    assert args.max_context_tokens == 6000 and args.context is not None


def test_responses_and_errors_as_seed_results() -> None:
    source = SourceRef(owner_scope="u-7", source_id="receipt.jpg", relevance=0.9)
    body = DelegationResult(
        summary="done",
        result="3 fields",
        new_facts=["total 12.50"],
        used_sources=[source],
        tool_calls=["read"],
        confidence=90,
        requires_followup=True,
    )
    response = ResponseEnvelope(
        message_id="m2",
        source_agent_id="byte-doc",
        target_agent_id="prime-boss",
        conversation_id="sess-1",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(
            action="task",
            result=msgspec.to_builtins(body),
            usage=TokenUsage(prompt=100, completion=50, total=150),
        ),
        metadata=Metadata(timestamp=1, correlation_id="req-1"),
    )
    ok = DelegationResponse.from_response(response, 42.0, "thread-9")
    assert (ok.request_id, ok.target_employee, ok.status, ok.token_usage.total) == (
        "req-1",
        "byte-doc",
        "success",
        150,
    )
    assert (ok.used_sources, ok.confidence, ok.requires_followup) == ([source], 90, True)
    assert (ok.duration_ms, ok.child_session_id) == (42.0, "thread-9")
    sub = ok.to_sub_agent_result()
    assert (sub.success, sub.output, sub.tool_calls, sub.tokens_used, sub.errors) == (
        True,
        "3 fields",
        ["read"],
        150,
        [],
    )
    assert sub.duration_seconds == pytest.approx(0.042)  # seed 000: 42 ms is 0.042 s
    error = PermissionDenied("no", agent="byte-doc", hop=2)
    failed = DelegationResponse.from_error("req-2", "byte-doc", error, 3.0)
    assert (failed.status, failed.error_code, failed.error_agent, failed.error_hop) == (
        "failed",
        "PERMISSION_DENIED",
        "byte-doc",
        2,
    )
    assert (failed.confidence, failed.requires_followup, failed.used_sources) == (None, False, [])
    assert failed.to_sub_agent_result().errors == ["PERMISSION_DENIED: no"]
    assert failed.to_sub_agent_result().duration_seconds == pytest.approx(0.003)


def test_plain_handler_values_become_delegation_results() -> None:
    assert as_delegation_result("short answer").result == "short answer"
    assert as_delegation_result({"summary": "s", "status": "partial"}).status == "partial"
    assert as_delegation_result({"unrelated": 1}).result == '{"unrelated":1}'
    assert ContextFilter(last_messages=3).last_messages == 3
