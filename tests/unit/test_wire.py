from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import msgspec
import pytest

from a2a.wire import wire_schemas
from bus import codec
from bus.errors import InvalidEnvelope, UnsupportedVersion
from bus.wire import (
    PROTOCOL_VERSION,
    ErrorEnvelope,
    ErrorInfo,
    Metadata,
    NotificationEnvelope,
    Payload,
    RequestEnvelope,
    ResponseEnvelope,
)

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def request(**overrides: object) -> RequestEnvelope:
    fields: dict[str, object] = dict(
        message_id="m1",
        source_agent_id="planner",
        target_agent_id="reader",
        conversation_id="c1",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="read", parameters={"path": "a.py"}),
        metadata=Metadata(timestamp=1, correlation_id="k1"),
    )
    fields.update(overrides)
    return RequestEnvelope(**fields)  # type: ignore[arg-type]


def test_round_trip_keeps_every_field_and_type() -> None:
    env = request(
        target_agent_id=["a", "b"],
        in_reply_to="m0",
        required_capabilities=["code.read"],
        user_id="u1",
        metadata=Metadata(
            timestamp=5,
            correlation_id="k",
            hop_count=2,
            max_hops=7,
            priority="high",
            ttl_ms=900,
            deadline=10,
            depth=1,
            max_depth=2,
            call_chain=["planner"],
            budget=100,
            parent_id="p",
        ),
    )
    assert codec.decode_envelope(codec.encode_envelope(env)) == env


@pytest.mark.parametrize("cls", [RequestEnvelope, ResponseEnvelope, NotificationEnvelope, ErrorEnvelope])
def test_the_type_field_selects_the_variant(cls: type) -> None:
    env = cls(**{f: getattr(request(), f) for f in request().__struct_fields__})
    data = json.loads(codec.encode_envelope(env))
    assert (
        data["type"]
        == {
            "RequestEnvelope": "request",
            "ResponseEnvelope": "response",
            "NotificationEnvelope": "notification",
            "ErrorEnvelope": "error",
        }[cls.__name__]
    )
    assert type(codec.decode_envelope(codec.encode_envelope(env))) is cls


def test_keys_are_camel_case_and_defaults_are_omitted() -> None:
    data = json.loads(codec.encode_envelope(request()))
    assert set(data) == {
        "type",
        "messageId",
        "sourceAgentId",
        "targetAgentId",
        "conversationId",
        "protocolVersion",
        "payload",
        "metadata",
    }
    assert data["metadata"] == {"timestamp": 1, "correlationId": "k1"}
    assert data["payload"] == {"action": "read", "parameters": {"path": "a.py"}}


def test_a_seed_004_envelope_decodes_with_defaults() -> None:
    seed = {
        "messageId": "m",
        "sourceAgentId": "a",
        "targetAgentId": "b",
        "conversationId": "c",
        "type": "request",
        "payload": {"action": "x"},
        "protocolVersion": "1.0",
        "metadata": {
            "timestamp": 1,
            "correlationId": "k",
            "hopCount": 0,
            "maxHops": 10,
            "priority": "normal",
        },
    }
    env = codec.decode_envelope(json.dumps(seed).encode())
    assert isinstance(env, RequestEnvelope)
    assert env.metadata.max_depth == 5 and env.metadata.call_chain == [] and env.metadata.ttl_ms is None


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("payload"), "payload"),
        (lambda d: d.update(type="telegram"), "type"),
        (lambda d: d["metadata"].update(hopCount="3"), "metadata.hopCount"),
        (lambda d: d["metadata"].update(hopCount=-1), "metadata.hopCount"),
        (lambda d: d["metadata"].pop("correlationId"), "metadata.correlationId"),
        (lambda d: d["metadata"].update(priority="urgent"), "metadata.priority"),
        (lambda d: d["payload"].update(action=7), "payload.action"),
        (lambda d: d.update(targetAgentId=""), "targetAgentId"),
        (lambda d: d.update(targetAgentId=[1]), "targetAgentId[0]"),
    ],
)
def test_invalid_envelopes_name_the_first_bad_field(mutate: object, field: str) -> None:
    data = json.loads(codec.encode_envelope(request()))
    mutate(data)  # type: ignore[operator]
    with pytest.raises(InvalidEnvelope) as info:
        codec.decode_envelope(json.dumps(data).encode())
    assert info.value.code == "INVALID_ENVELOPE"
    assert info.value.details["field"] == field


@pytest.mark.parametrize("raw", [b"", b"{", b"\xff\xfe", b"[]", b"null", b'"request"'])
def test_malformed_bytes_are_invalid_envelopes(raw: bytes) -> None:
    with pytest.raises(InvalidEnvelope):
        codec.decode_envelope(raw)


def test_the_seed_version_and_every_one_since_are_accepted() -> None:
    for version in ("1.0", "1.1", "1.2", PROTOCOL_VERSION, "1.4", "1.5"):
        codec.ensure_supported_version(request(protocol_version=version))
    for version in ("2.0", "0.9", "banana"):
        with pytest.raises(UnsupportedVersion) as info:
            codec.ensure_supported_version(request(protocol_version=version))
        assert info.value.details["supported"] == ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5"]


def test_checked_in_schemas_match_the_types() -> None:
    generated = wire_schemas()
    on_disk = {p.name: p.read_text() for p in SCHEMAS.glob("*.json")}
    assert on_disk == generated, "schemas/ drifted from the wire types: run `a2a schemas`"


def test_encoded_envelopes_satisfy_the_published_schema() -> None:
    schema = json.loads((SCHEMAS / "envelope.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    error = ErrorEnvelope(**{f: getattr(request(), f) for f in request().__struct_fields__})
    error.payload = Payload(action="read", error=ErrorInfo(code="AGENT_ERROR", message="x"))
    for env in (request(), error):
        validator.validate(json.loads(codec.encode_envelope(env)))
    bad = json.loads(codec.encode_envelope(request()))
    bad["metadata"]["hopCount"] = "x"
    assert not validator.is_valid(bad)


def test_error_info_round_trips_to_the_same_error_type() -> None:
    from bus.errors import CycleDetected, error_from_info

    err = CycleDetected("loop", agent="writer", hop=3, details={"callChain": ["a", "b"]})
    back = error_from_info(msgspec.json.decode(msgspec.json.encode(err.to_info()), type=ErrorInfo))
    assert isinstance(back, CycleDetected) and back.remote
    assert (back.code, back.agent, back.hop, back.details) == (
        "CYCLE_DETECTED",
        "writer",
        3,
        {"callChain": ["a", "b"]},
    )
    unknown = error_from_info(ErrorInfo(code="FUTURE_CODE", message="m"))
    assert unknown.code == "FUTURE_CODE"
