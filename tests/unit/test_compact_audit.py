"""Audit records in the compact form of protocol 1.4: every field survives, readers take
both forms, and a runtime writes the compact one unless its ``peer_protocol`` is 1.3, leaving
out (1.5) a conversation id that is the request id unless its ``peer_protocol`` is 1.4."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from a2a import Agent, Context
from a2a.stores.audit import callee_record, decode_records
from bus.audit import AUDIT_KEYS, AuditRecord, decode_audit_line, encode_audit_lines
from bus.errors import DeadlineExceeded
from transports import Message

from .conftest import MakeRuntime
from .test_compact_envelope import as_compact, echo_request

pytestmark = pytest.mark.anyio

_full = msgspec.json.Encoder().encode_lines


def everything() -> AuditRecord:
    """A record with every field set, none to its default (nor to the compact form's)."""
    return AuditRecord(
        request_id="r1",
        conversation_id="c1",
        origin="planner",
        target="reader",
        action="read",
        outcome="error",
        side="caller",
        started_at=1_795_786_799_428,
        duration_ms=12.345,
        hop=3,
        depth=2,
        instance="reader-1a2b3c4d",
        user_id="u-42",
        parent_id="p1",
        correlation_id="k1",
        objective="read it",
        routed_by="code.read",
        error_code="AGENT_ERROR",
        error_message="it broke",
        error_agent="reader",
        tokens=42,
        tools=["grep", "sed"],
    )


def test_every_field_of_a_record_survives_the_compact_form() -> None:
    record = everything()
    (line,) = encode_audit_lines([record]).splitlines()
    assert line.startswith(b'{"ri":') and b"requestId" not in line
    assert decode_audit_line(line) == record
    assert set(AUDIT_KEYS) == set(AuditRecord.__struct_fields__)
    assert len(set(AUDIT_KEYS.values())) == len(AUDIT_KEYS)


def test_a_callee_record_of_an_answered_call_leaves_its_side_and_outcome_out() -> None:
    request = as_compact(echo_request())
    record = callee_record(request, "echo", "echo-42c5cb5a", 0.000177, None)
    (line,) = encode_audit_lines([record]).splitlines()
    assert b'"sd"' not in line and b'"x"' not in line
    assert decode_audit_line(line) == record
    full = _full([record]).rstrip(b"\n")
    assert len(full) >= 235 and len(line) <= 155  # 240 -> 151 bytes for the echo call


def test_readers_take_both_forms_in_one_batch_and_still_check_the_author() -> None:
    answered = callee_record(as_compact(echo_request()), "echo", "echo-1", 0.001, None)
    late = callee_record(echo_request(), "echo", "echo-1", 0.002, DeadlineExceeded("late"))
    forged = msgspec.structs.replace(answered, target="bank")
    data = encode_audit_lines([answered]) + _full([late]) + encode_audit_lines([forged]) + b"not json\n"
    assert decode_records(data, "a2a.ns.audit.echo") == [answered, late]


def test_a_conversation_id_that_is_the_request_id_is_left_out_for_readers_of_1_5() -> None:
    first_hop = msgspec.structs.replace(everything(), conversation_id="r1")
    later_hop = everything()
    (kept,) = encode_audit_lines([first_hop]).splitlines()
    (left_out, other) = encode_audit_lines([first_hop, later_hop], elide=True).splitlines()
    assert b'"c":"r1"' in kept and b'"c"' not in left_out and b'"c":"c1"' in other
    assert len(kept) - len(left_out) == len(b',"c":"r1"')
    assert [decode_audit_line(line) for line in (kept, left_out, other)] == [first_hop, first_hop, later_hop]


@pytest.mark.parametrize(
    ("version", "mark", "conversation"),
    [
        ("1.3", b'{"requestId":', True),
        ("1.4", b'{"ri":', True),
        ("1.5", b'{"ri":', False),
        ("auto", b'{"ri":', False),
    ],
)
async def test_a_runtime_writes_the_compact_form_unless_asked_for_the_full_one(
    make_runtime: MakeRuntime, version: str, mark: bytes, conversation: bool
) -> None:
    echo = Agent("echo")

    @echo.action("run")
    async def _run(ctx: Context, params: dict[str, Any]) -> Any:
        return params

    seen: list[bytes] = []
    got = anyio.Event()

    async def spy(msg: Message) -> None:
        seen.append(msg.data)
        got.set()

    server = await make_runtime(echo, audit=True, peer_protocol=version)
    client = await make_runtime(peer_protocol=version)
    await client.bus.transport.subscribe(client.bus.subjects.audit("echo"), spy)
    assert await client.call("echo", "run", {"n": 1}) == {"n": 1}
    await server.audit.flush()
    with anyio.fail_after(2):
        await got.wait()
    assert seen[0].startswith(mark)
    (record,) = decode_records(seen[0], client.bus.subjects.audit("echo"))
    assert (record.target, record.action, record.outcome, record.side) == ("echo", "run", "ok", "callee")
    # A call from outside naming no conversation: its conversation is its call tree's id.
    assert record.conversation_id == record.request_id
    assert (b'"c":' in seen[0] or b'"conversationId":' in seen[0]) is conversation


def test_a_record_takes_its_fields_by_name_only() -> None:
    # Its fields' order is the compact form's (required ones first); a caller building one
    # by position would put values under the wrong names without an error.
    with pytest.raises(TypeError):
        AuditRecord("r", "c", "o", "d", "a", 1, 1.5, "ok", "callee")  # type: ignore[call-arg]
