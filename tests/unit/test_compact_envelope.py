"""The compact form of protocol 1.4 (``bus.compact``): every field survives it, replies are
completed from their requests, a conversation id that is the call tree's is left out for
readers of 1.5, and a 64-byte echo call fits in far fewer bytes."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from bus import codec
from bus.answers import encode_answer, encode_response, error_to, response_to
from bus.compact import ENVELOPE_KEYS, METADATA_KEYS, PAYLOAD_KEYS, REPLY_KEYS, encode_compact, encode_reply
from bus.errors import InvalidEnvelope, UnknownAction
from bus.handoff import Delegation, FilteredContext, Grants, HandoffData
from bus.ids import new_id, serial_id
from bus.wire import (
    COMPACT_VERSION,
    PROTOCOL_VERSION,
    ErrorEnvelope,
    ErrorInfo,
    Metadata,
    NotificationEnvelope,
    Orchestration,
    Payload,
    RequestEnvelope,
    TokenUsage,
)

T0 = 1_795_786_799_428  # a timestamp of this century (13 digits, as every one until 2286)


def everything() -> RequestEnvelope:
    """A request with every field set, none to its default."""
    return RequestEnvelope(
        message_id=new_id(),
        source_agent_id="planner",
        target_agent_id=["style", "security"],
        conversation_id=new_id(),
        protocol_version=PROTOCOL_VERSION,
        in_reply_to="earlier",
        required_capabilities=["code.read", "code.edit"],
        user_id="u-42",
        user_grant="a2a1.payload.signature",
        grants=Grants(allowed_tools=["grep"], allow_nested_calls=False),
        delegation=Delegation(
            task="tidy",
            objective="no trailing spaces",
            input={"path": "app.py"},
            context=FilteredContext(summary="so far"),
            context_hints=["recent"],
            handoff=HandoffData(facts=["a fact"]),
            thread_mode="reuse",
            thread_id="th-1",
            max_context_tokens=500,
            expected_outcome="a diff",
        ),
        orchestration=Orchestration(
            origin_agent_device_id="dev-1", trace_id="tr-1", hop_count=3, orchestrator_profile_id="op-1"
        ),
        payload=Payload(
            action="read",
            parameters={"path": "app.py", "n": [1, 2.5, None, True]},
            result={"unusual": "on a request"},
            error=ErrorInfo(code="AGENT_ERROR", message="m", agent="a", hop=2, details={"k": 1}),
            usage=TokenUsage(prompt=1, completion=2, total=3),
        ),
        metadata=Metadata(
            timestamp=T0,
            correlation_id=new_id(),
            hop_count=3,
            max_hops=7,
            priority="high",
            ttl_ms=29_500,
            deadline=T0 + 29_500,
            depth=2,
            max_depth=4,
            call_chain=["client", "planner"],
            budget=1000,
            request_id=new_id(),
            parent_id=new_id(),
            fan_out=2,
            max_fan_out=8,
            batch_replies=False,
        ),
    )


def echo_request() -> RequestEnvelope:
    """The request a runtime sends for ``call("echo", "run", {"text": "x" * 64}, timeout=10)``:
    a new conversation, whose id is its call tree's."""
    tree = new_id()
    return RequestEnvelope(
        message_id=new_id(),
        source_agent_id="client",
        target_agent_id="echo",
        conversation_id=tree,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="run", parameters={"text": "x" * 64}),
        metadata=Metadata(
            timestamp=T0,
            correlation_id=tree,
            hop_count=1,
            ttl_ms=10_000,
            deadline=T0 + 10_000,
            batch_replies=True,
        ),
    )


def as_compact(env: RequestEnvelope) -> RequestEnvelope:
    """``env`` as the callee reads it from the compact form."""
    decoded = codec.decode_envelope(encode_compact(env))
    assert type(decoded) is RequestEnvelope
    return decoded


def test_every_field_of_a_request_survives_the_compact_form() -> None:
    sent = everything()
    data = encode_compact(sent)
    assert data.startswith(b'{"t":"q"') and b"messageId" not in data
    got = codec.decode_envelope(data)
    assert type(got) is RequestEnvelope
    assert got.protocol_version == COMPACT_VERSION
    assert got == msgspec.structs.replace(sent, protocol_version=COMPACT_VERSION)


def test_a_notification_survives_the_compact_form() -> None:
    r = everything()
    sent = NotificationEnvelope(
        **{f: getattr(r, f) for f in r.__struct_fields__}  # type: ignore[arg-type]
    )
    got = codec.decode_envelope(encode_compact(sent))
    assert type(got) is NotificationEnvelope
    assert got == msgspec.structs.replace(sent, protocol_version=COMPACT_VERSION)


@pytest.mark.parametrize(
    ("ttl_ms", "deadline", "written"),
    [
        (10_000, T0 + 10_000, None),  # the usual one: ts + ttl, not written
        (10_000, T0 + 7, T0 + 7),  # any other deadline is written
        (10_000, None, "null"),  # none although there is a ttl: written as null
        (None, T0 + 5, T0 + 5),
        (None, None, None),
    ],
)
def test_the_deadline_is_written_only_when_it_is_not_timestamp_plus_ttl(
    ttl_ms: int | None, deadline: int | None, written: Any
) -> None:
    sent = echo_request()
    sent.metadata.ttl_ms, sent.metadata.deadline = ttl_ms, deadline
    data = encode_compact(sent)
    if written is None:
        assert b'"dl"' not in data
    else:
        assert f'"dl":{written}'.encode() in data
    assert as_compact(sent).metadata == sent.metadata


def test_defaults_of_the_compact_form_still_travel_when_not_taken() -> None:
    sent = echo_request()
    sent.metadata.batch_replies = False
    data = encode_compact(sent)
    assert b'"br":false' in data and b'"v"' not in data
    assert as_compact(sent).metadata.batch_replies is False
    assert b'"br"' not in encode_compact(echo_request())  # true: the compact default


@pytest.mark.parametrize("kind", [RequestEnvelope, NotificationEnvelope])
def test_a_conversation_id_that_is_the_call_trees_is_left_out_for_readers_of_1_5(kind: type) -> None:
    r = echo_request()
    sent = kind(**{f: getattr(r, f) for f in r.__struct_fields__})
    kept, left_out = encode_compact(sent), encode_compact(sent, elide=True)
    assert f'"c":"{sent.conversation_id}"'.encode() in kept
    assert b'"c"' not in left_out and b'"v"' not in left_out
    assert len(kept) - len(left_out) == len(f',"c":"{sent.conversation_id}"')
    for data in (kept, left_out):
        got = codec.decode_envelope(data)
        assert type(got) is kind
        assert got == msgspec.structs.replace(sent, protocol_version=COMPACT_VERSION)
    # Another conversation than the tree's travels whatever the receiver reads.
    other = msgspec.structs.replace(sent, conversation_id="thread-7")
    assert b'"c":"thread-7"' in encode_compact(other, elide=True)
    assert codec.decode_envelope(encode_compact(other, elide=True)).conversation_id == "thread-7"


def test_an_empty_conversation_id_is_refused_not_taken_for_one_left_out() -> None:
    data = encode_compact(echo_request()).replace(b'"c":"', b'"c":"",  "x":"', 1)
    with pytest.raises(InvalidEnvelope) as info:
        codec.decode_envelope(data)
    assert info.value.details["field"] == "conversationId"


def test_a_message_naming_1_5_is_the_compact_form_answered_compact() -> None:
    """A 1.5 message says 1.4 (``v`` left out); one that says 1.5 anyway is read alike, and a
    full-form envelope saying 1.5 is read and answered as 1.3."""
    fields = json.loads(encode_compact(echo_request(), elide=True))
    fields["v"] = "1.5"
    request = codec.decode_envelope(json.dumps(fields).encode())
    assert isinstance(request, RequestEnvelope) and request.protocol_version == COMPACT_VERSION
    assert encode_response(request, "echo", {"text": "x"}, None).startswith(b'{"t":"r"')
    full = json.loads(codec.encode_envelope(echo_request()))
    full["protocolVersion"] = "1.5"
    request = codec.decode_envelope(json.dumps(full).encode())
    assert isinstance(request, RequestEnvelope) and request.protocol_version == PROTOCOL_VERSION


def test_every_field_has_one_short_key() -> None:
    for full, keys in (
        (RequestEnvelope, ENVELOPE_KEYS),
        (Payload, PAYLOAD_KEYS),
        (Metadata, METADATA_KEYS),
    ):
        assert set(keys) == set(full.__struct_fields__), full.__name__
        assert len(set(keys.values())) == len(keys), f"{full.__name__}: a key used twice"
        assert "t" not in keys.values()  # the tag
    assert len(set(REPLY_KEYS.values())) == len(REPLY_KEYS)


def test_the_fields_the_callee_checks_survive_the_compact_form() -> None:
    """User, lineage, limits, ids: what ``a2a.core.admission.admit`` and the guard read."""
    sent = everything()
    got = as_compact(sent)
    m, s = got.metadata, sent.metadata
    assert (got.user_id, got.user_grant, got.source_agent_id) == (sent.user_id, sent.user_grant, "planner")
    assert (m.correlation_id, m.request_id, m.parent_id, m.key) == (
        s.correlation_id,
        s.request_id,
        s.parent_id,
        s.key,
    )
    assert (m.hop_count, m.max_hops, m.depth, m.max_depth, m.call_chain) == (
        3,
        7,
        2,
        4,
        ["client", "planner"],
    )
    assert (m.ttl_ms, m.deadline, m.budget, m.fan_out, m.max_fan_out) == (29_500, T0 + 29_500, 1000, 2, 8)
    assert got.grants == sent.grants and got.delegation == sent.delegation
    assert got.required_capabilities == sent.required_capabilities
    assert got.conversation_id == sent.conversation_id and got.message_id == sent.message_id


def test_a_response_to_a_compact_request_leaves_out_what_the_request_says() -> None:
    request = as_compact(everything())
    request.target_agent_id = "style"
    response = response_to(request, "style", {"ok": [1, 2]}, TokenUsage(prompt=5, total=5))
    data = encode_answer(response, request)
    assert data.startswith(b'{"t":"r"')
    for absent in (b'"s"', b'"c"', b'"ci"', request.conversation_id.encode(), b"u-42", b"read"):
        assert absent not in data
    got = codec.decode_answer(data, request)
    assert got == msgspec.structs.replace(response, protocol_version=COMPACT_VERSION)


def test_an_error_to_a_compact_request_is_compact_and_complete() -> None:
    request = as_compact(echo_request())
    error = UnknownAction("echo has no action 'run'", details={"actions": ["echo"]}).located("echo", 1)
    reply = error_to(request, "echo", "a2a.ns.reply.x.y." + request.metadata.key, error, TokenUsage(total=1))
    data = encode_answer(reply, request)
    assert data.startswith(b'{"t":"e"')
    got = codec.decode_answer(data, request)
    assert type(got) is ErrorEnvelope
    assert got == msgspec.structs.replace(reply, protocol_version=COMPACT_VERSION)
    assert got.payload.error is not None and got.payload.error.code == "UNKNOWN_ACTION"


def test_a_reply_to_several_agents_names_the_one_that_answers() -> None:
    request = as_compact(everything())  # to style and security
    response = response_to(request, "security", "fine", None)
    data = encode_answer(response, request)
    assert b'"s":"security"' in data
    assert codec.decode_answer(data, request).source_agent_id == "security"
    unnamed = data.replace(b',"s":"security"', b"")
    with pytest.raises(InvalidEnvelope):
        codec.decode_answer(unnamed, request)


def test_a_reply_that_says_more_than_its_request_travels_in_the_full_form() -> None:
    request = as_compact(echo_request())
    for change in (
        {"user_id": "mallory"},
        {"conversation_id": "elsewhere"},
        {"in_reply_to": None},
        {"grants": Grants()},
    ):
        response = msgspec.structs.replace(response_to(request, "echo", 1, None), **change)
        assert encode_reply(response, request) is None
        data = encode_answer(response, request)
        assert data.startswith(b'{"type":"response"')
        assert codec.decode_answer(data, request) == response
    moved = response_to(request, "echo", 1, None)
    moved.metadata.hop_count += 1
    assert encode_reply(moved, request) is None


def test_replies_to_full_form_requests_stay_in_the_full_form() -> None:
    request = echo_request()  # 1.3, as a caller that does not send the compact form writes it
    response = response_to(request, "echo", {"text": "x"}, None)
    data = encode_answer(response, request)
    assert data.startswith(b'{"type":"response"') and b'"protocolVersion":"1.3"' in data
    assert codec.decode_answer(data, request) == response
    # An error to a message that could not be read names no request: full form too.
    error = error_to(None, "echo", "a2a.ns.reply.x.y.abc", InvalidEnvelope("bad"), None)
    assert encode_answer(error, None).startswith(b'{"type":"error"')


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"t":"q"}', "messageId"),
        (b'{"t":"x"}', "type"),
        (b'{"t":"q","i":"m","s":"a","d":"b","c":"c","p":{"a":"x"},"m":{"ts":1}}', "metadata.correlationId"),
        (
            b'{"t":"q","i":"m","s":"a","d":"b","c":"c","p":{"a":"x"},"m":{"ts":1,"ci":"c","h":-1}}',
            "metadata.hopCount",
        ),
        (b'{"t":"q","i":"","s":"a","d":"b","c":"c","p":{"a":"x"},"m":{"ts":1,"ci":"c"}}', "messageId"),
        (b'{"t":"q","i":"m","s":"a","d":"b","c":"c","p":{"a":1},"m":{"ts":1,"ci":"c"}}', "payload.action"),
        (b'{"t":"q", "i": ', "$"),
    ],
)
def test_bad_compact_envelopes_are_invalid_naming_the_full_field(raw: bytes, field: str) -> None:
    with pytest.raises(InvalidEnvelope) as info:
        codec.decode_envelope(raw)
    assert info.value.details["field"] == field


def test_the_compact_form_is_read_whatever_the_order_of_its_keys() -> None:
    sent = echo_request()
    data = encode_compact(sent)
    fields = json.loads(data)
    fields["t"] = fields.pop("t")  # last
    moved = json.dumps(fields).encode()
    assert not moved.startswith(b'{"t":')
    assert codec.decode_envelope(moved) == codec.decode_envelope(data)
    # A reply too, keys sorted as many JSON libraries write them, or spaced.
    request = codec.decode_envelope(data)
    assert isinstance(request, RequestEnvelope)
    reply = encode_answer(response_to(request, "echo", {"text": "x"}, None), request)
    assert reply.startswith(b'{"t":"r"')
    expected = codec.decode_answer(reply, request)
    for other in (json.dumps(json.loads(reply), sort_keys=True).encode(), b"{ " + reply[1:]):
        assert not other.startswith(b'{"t":')
        assert codec.decode_answer(other, request) == expected


def test_a_full_form_request_naming_version_1_4_is_read_and_answered_as_1_3() -> None:
    """1.4 is the compact form: a full-form envelope saying 1.4 (a person pasting an example
    into ``nats req``, a peer of its own) gets a full-form answer, which it can read."""
    full = json.loads(codec.encode_envelope(echo_request()))
    full["protocolVersion"] = COMPACT_VERSION
    request = codec.decode_envelope(json.dumps(full).encode())
    assert isinstance(request, RequestEnvelope) and request.protocol_version == PROTOCOL_VERSION
    assert encode_response(request, "echo", {"text": "x"}, None).startswith(b'{"type":"response"')


def test_a_64_byte_echo_call_fits_in_about_half_the_bytes() -> None:
    """Bytes of the bench's call (``a2a.bench.nats_cost``): request and reply bodies as
    nats-server counts them (its in/out bytes leave subjects out), in both forms."""
    request = echo_request()
    full = len(codec.encode_envelope(request)) + len(
        codec.encode_envelope(response_to(request, "echo", {"text": "x" * 64}, None))
    )
    compact_request = encode_compact(request, elide=True)
    read = codec.decode_envelope(compact_request)
    assert isinstance(read, RequestEnvelope)
    reply = encode_answer(response_to(read, "echo", {"text": "x" * 64}, None), read)
    reply_id = serial_id()  # a reply's own id: shorter than the request's ids
    assert len(reply_id) <= 15
    assert full >= 800  # 467 + 437 before the compact form and 22-character ids
    assert len(compact_request) <= 235  # 263 with its conversation id (1.4)
    assert len(reply) <= 165
    # 64 calls in flight: replies travel in batches, one line per reply with its call's id.
    batch_line = len(request.metadata.key) + 1 + len(reply)
    assert len(compact_request) + len(reply) <= 395
    assert len(compact_request) + batch_line <= 420


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("agent", ["style", "security"])
@pytest.mark.parametrize("usage", [None, TokenUsage(prompt=5, completion=2, total=7)])
@pytest.mark.parametrize("result", [None, 0, "", "text", [1, {"a": None}], {"ok": [1, 2], "n": 1.5}])
def test_the_callees_response_encoding_is_encode_answer_of_response_to(
    compact: bool, agent: str, usage: TokenUsage | None, result: Any
) -> None:
    """``encode_response`` (the callee's hot path) gives the bytes ``encode_answer`` gives for
    ``response_to``'s response, a compact request's without building that response."""
    request = as_compact(everything()) if compact else everything()
    request.target_agent_id = ["style", "security"] if agent == "security" else "style"
    fast = encode_response(request, agent, result, usage)
    slow = encode_answer(response_to(request, agent, result, usage), request)
    assert fast.startswith(b'{"t":"r"') == compact

    def same(data: bytes) -> Any:  # its own message id and timestamp aside
        reply = codec.decode_answer(data, request)
        return msgspec.structs.replace(
            reply, message_id="-", metadata=msgspec.structs.replace(reply.metadata, timestamp=0)
        )

    assert same(fast) == same(slow)
    assert len(fast) - len(slow) in range(-4, 5)  # ids and timestamps of about the same length
