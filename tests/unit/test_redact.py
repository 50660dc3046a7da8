from __future__ import annotations

import re

import pytest

from a2a.delegation.redact import Redactor, Rule, luhn_valid

redactor = Redactor()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to jane.doe+shop@example.co.uk today", "write to [EMAIL] today"),
        ("call +1 415-555-0132", "call [PHONE]"),
        ("office (020) 7946 0958", "office [PHONE]"),
        ("mobile +442079460958", "mobile [PHONE]"),
        ("us 415.555.0132", "us [PHONE]"),
        ("visa 4111 1111 1111 1111 exp", "visa [CARD] exp"),
        ("amex 3782-822463-10005", "amex [CARD]"),
        ("Authorization: Bearer abc.DEF-123_456~xyz", "Authorization: Bearer [TOKEN]"),
        ("key sk-proj-AbCdEfGhIjKlMnOpQr12", "key [API_KEY]"),
        ("aws AKIAIOSFODNN7EXAMPLE", "aws [API_KEY]"),
        ("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gh [API_KEY]"),
        ("slack xoxb-123456789012-abcdefghij", "slack [API_KEY]"),
        ('api_key="s3cr3t-value"', "api_key=[SECRET]"),
        ("password: hunter22!", "password: [SECRET]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4", "jwt [TOKEN]"),
    ],
)
def test_pii_and_secrets_are_redacted(text: str, expected: str) -> None:
    assert redactor.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "order 2024-11-22 had 3 items costing 19.99",
        "version 1.2.3 build 20241122 on port 4222",
        "server 10.0.0.12:6379 and pid 12345",
        "account 1234 5678 9012 3456",  # 16 digits that fail the Luhn check
        "the token budget is 4000 tokens",
        "def parse(text: str) -> dict: ...",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redactor.redact(text) == text


def test_luhn() -> None:
    assert luhn_valid("4111111111111111") and luhn_valid("378282246310005")
    assert not luhn_valid("4111111111111112") and not luhn_valid("123")


def test_rules_are_pluggable_and_nested_values_are_redacted() -> None:
    custom = redactor.with_rules(Rule("employee", re.compile(r"\bEMP-\d{6}\b"), "[EMPLOYEE]"))
    value = {"notes": ["EMP-123456 mailed a@b.io"], "n": 3, "nested": {"k": "Bearer abcdefghijkl"}}
    assert custom.redact_value(value) == {
        "notes": ["[EMPLOYEE] mailed [EMAIL]"],
        "n": 3,
        "nested": {"k": "Bearer [TOKEN]"},
    }
    assert redactor.redact("EMP-123456") == "EMP-123456"
    assert custom.findings("EMP-123456 a@b.io a@c.io") == {"email": 2, "employee": 1}
