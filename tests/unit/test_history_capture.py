"""The texts and summaries the runtime's history capture writes (no server needed)."""

from __future__ import annotations

from a2a import Redactor, Settings
from a2a.errors import AgentError
from a2a.stores.capture import MESSAGE_CHARS, answer_text, request_text
from a2a.stores.summary import SUMMARY_CHARS, SummaryInput, exchanges, summarise
from a2a.wire import ChatMessage
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope


def request(action: str, params: dict[str, object] | None) -> RequestEnvelope:
    return RequestEnvelope(
        message_id="m1",
        source_agent_id="client",
        target_agent_id="notes",
        conversation_id="c1",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action=action, parameters=params),
        metadata=Metadata(timestamp=0, correlation_id="r1", hop_count=1),
    )


def test_a_request_is_its_text_parameter_else_its_action_and_redacted_parameters() -> None:
    redactor = Redactor()
    assert request_text(request("reply", {"text": "hello", "n": 1}), redactor) == "hello"
    assert request_text(request("ping", None), redactor) == "ping"
    text = request_text(
        request("deploy", {"password": "hunter2-secret", "mail": "jane@example.com"}), redactor
    )
    assert text.startswith("deploy {") and "hunter2" not in text and "jane@example.com" not in text
    long = request_text(request("reply", {"text": "x" * 10_000}), redactor)
    assert len(long) == MESSAGE_CHARS


def test_an_answer_is_the_result_or_the_error_code_and_message() -> None:
    redactor = Redactor()
    assert answer_text("done", None, redactor) == "done"
    assert answer_text({"ok": True}, None, redactor) == '{"ok":true}'
    assert answer_text(None, AgentError("disk full"), redactor) == "[AGENT_ERROR] disk full"
    assert "sk-proj" not in answer_text({"api_key": "sk-proj-abcdefghijklmnop1234"}, None, redactor)


def msg(role: str, content: str, name: str | None = None) -> ChatMessage:
    return ChatMessage(role=role, content=content, name=name)


def test_exchanges_pair_a_request_with_the_answer_after_it() -> None:
    messages = [
        msg("user", "a"),
        msg("assistant", "b"),
        msg("system", "c"),
        msg("agent", "d"),
        msg("assistant", "e"),
    ]
    pairs = exchanges(messages)
    assert [(ask.content, answer.content if answer else None) for ask, answer in pairs] == [
        ("a", "b"),
        ("c", None),
        ("d", "e"),
    ]


def test_the_default_summary_is_the_goal_and_the_last_exchanges_deterministic_and_bounded() -> None:
    messages = []
    for i in range(12):
        messages += [msg("user", f"question {i}", "client"), msg("assistant", f"answer {i}", "notes")]
    digest = SummaryInput(conversation_id="c1", goal="ship the release", messages=messages)
    text = summarise(digest)
    assert text == summarise(digest)
    lines = text.splitlines()
    assert lines[0] == "Goal: ship the release" and lines[1] == "Last 5 exchanges:"
    assert lines[2] == "- client -> notes: question 7 => answer 7" and lines[-1].endswith("answer 11")
    without_goal = summarise(SummaryInput(conversation_id="c1", goal=None, messages=messages))
    assert without_goal.startswith("Goal: question 0")
    huge = [msg("user", "word " * 5000), msg("assistant", "word " * 5000)] * 5
    assert len(summarise(SummaryInput(conversation_id="c", goal="g " * 5000, messages=huge))) <= SUMMARY_CHARS
    assert summarise(SummaryInput(conversation_id="c", goal=None, messages=[])) == ""


def test_capture_is_on_by_default_and_off_by_its_variable() -> None:
    assert Settings().history_capture
    assert not Settings.from_env({"A2A_HISTORY_CAPTURE": "false"}).history_capture


def test_json_answers_are_redacted_per_string_and_keys_that_hold_secrets_too() -> None:
    redactor = Redactor()
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
    text = answer_text({"pem": key, "note": "fine", "nested": [{"to": "jane@example.com"}]}, None, redactor)
    assert "MIIEow" not in text and "jane@example.com" not in text  # redacted as strings, before escaping
    assert '"note":"fine"' in text
    secret_key = "sk-proj-abcdefghijklmnop1234"
    assert secret_key not in answer_text({secret_key: 1, "n": 2}, None, redactor)  # a secret as a key
    assert answer_text({"text": "x" * 64, "n": 1}, None, redactor) == '{"text":"' + "x" * 64 + '","n":1}'
    assert answer_text({"secret": {"a": "b"}}, None, redactor) == '{"secret":"[SECRET]"}'


def test_secrets_a_name_and_its_value_make_together_and_numbers_are_redacted_too() -> None:
    redactor = Redactor()
    for value, secret in (
        ({"db_pass": "hunter2"}, "hunter2"),
        ({"pw": "hunter2x"}, "hunter2x"),
        ({"token_hash": "abcd1234"}, "abcd1234"),
        ({"secret_key_base": "s3cr3tvalue"}, "s3cr3tvalue"),
        ({"user_pass": 123456}, "123456"),
        (4111111111111111, "4111111111111111"),
        ([4111111111111111], "4111111111111111"),
        ({"card": 4111111111111111}, "4111111111111111"),
    ):
        assert secret not in answer_text(value, None, redactor), value
