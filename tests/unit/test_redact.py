from __future__ import annotations

import logging
import re
import timeit

import pytest

from a2a.delegation.redact import MAX_DEPTH, RedactingFilter, Redactor, Rule, is_secret_key, luhn_valid

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
        ('api_key="s3cr3t-value"', 'api_key="[SECRET]"'),
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


# -- secrets by pattern --------------------------------------------------------------

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7bq0vJ0Qh3cm8bXl\n"
    "Zk2Q9Jw1Hq3nZl8xWc==\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # AWS: access key ids, and secret keys where they are named
        ("id AKIAIOSFODNN7EXAMPLE", "id [API_KEY]"),
        ("temporary ASIAIOSFODNN7EXAMPLE", "temporary [API_KEY]"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [SECRET]",
        ),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=[SECRET]"),
        ('{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG"}', '{"SecretAccessKey": "[SECRET]"}'),
        # HTTP authorization
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [SECRET]"),
        ("proxy-authorization: Digest abc123", "proxy-authorization: Digest [SECRET]"),
        ('{"Authorization": "Basic dXNlcjpw"}', '{"Authorization": "Basic [SECRET]"}'),
        ("authorization=opaque-value-1", "authorization=[SECRET]"),
        ('{"authorization": "Bearer abcdefghijklmnop"}', '{"authorization": "Bearer [TOKEN]"}'),
        ("curl -H 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'", "curl -H 'Bearer [TOKEN]'"),
        ("Cookie: sid=abc123; theme=dark\nAccept: */*", "Cookie: [SECRET]\nAccept: */*"),
        ("Set-Cookie: sid=abc123; HttpOnly", "Set-Cookie: [SECRET]"),
        # private keys, whole, and cut off by a preview
        (f"key:\n{PEM}\nend", "key:\n[PRIVATE_KEY]\nend"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA…", "[PRIVATE_KEY]"),
        ("-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg\\n-----END PRIVATE KEY-----", "[PRIVATE_KEY]"),
        # credentials in URLs keep the user and the host
        ("redis://:s3cret@redis.internal:6379/0", "redis://:[SECRET]@redis.internal:6379/0"),
        ("postgres://app:hunter2@db.example.com/app", "postgres://app:[SECRET]@db.example.com/app"),
        (
            "nats://planner:pa55@nats-1:4222,nats://nats-2:4222",
            "nats://planner:[SECRET]@nats-1:4222,nats://nats-2:4222",
        ),
        # vendor tokens
        ("gh github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "gh [API_KEY]"),
        ("slack xoxp-1234-5678-abcdefabcdef", "slack [API_KEY]"),
        ("openai sk-AbCdEfGhIjKlMnOpQrSt1234", "openai [API_KEY]"),
        ("anthropic sk-ant-api03-AbCdEfGhIjKlMnOpQrSt-1234", "anthropic [API_KEY]"),
        ("stripe sk_live_AbCdEfGhIjKlMnOp1234", "stripe [API_KEY]"),
        # secret names, in JSON, Python, query strings, YAML and env files
        ('{"password": "hunter2", "user": "bob"}', '{"password": "[SECRET]", "user": "bob"}'),
        ("{'password': 'x', 'api_key': 'abc'}", "{'password': '[SECRET]', 'api_key': '[SECRET]'}"),
        ('{"passwd":"x"}', '{"passwd":"[SECRET]"}'),
        ("login?user=bob&password=x&next=/", "login?user=bob&password=[SECRET]&next=/"),
        ("PASSWORD: hunter2", "PASSWORD: [SECRET]"),
        ("db_password = 'p@ss w0rd'", "db_password = '[SECRET]'"),
        ("client_secret: abc", "client_secret: [SECRET]"),
        ("x-api-key: abc123", "x-api-key: [SECRET]"),
        ("apiKey=abc123", "apiKey=[SECRET]"),
        ("private_key: abc", "private_key: [SECRET]"),
        ("access-key: abc", "access-key: [SECRET]"),
        ("github_token=abc", "github_token=[SECRET]"),
        ("credentials: abc", "credentials: [SECRET]"),
        ("session_id=abc", "session_id=[SECRET]"),
        ("pwd=abc", "pwd=[SECRET]"),
        ('{"password": 123456}', '{"password": [SECRET]}'),
        ('payload {\\"password\\": \\"hunter2\\"}', 'payload {\\"password\\": \\"[SECRET]\\"}'),
    ],
)
def test_secrets_are_redacted(text: str, expected: str) -> None:
    assert redactor.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "conversation 6f1c2a9e-4b7d-4e0a-9c3b-2d5f8e7a1b0c belongs to another user",
        "commit 3f9a1c0e7b2d4a6f8e1c3b5d7f9a0b2c4d6e8f01, request 01J9Z3K6W8Q4N2M5T7V0X1Y2B3",
        "max_tokens=4000 token_budget=100 tokens_used: 3 token_usage: {}",
        "bypass=yes compass: north child_session_id=abc thread_id=t1",
        "password: null, token: None, secret: true",
        "passenger: alice; keyboard: us; primary_key=id; secret_name=db-prod",
        "https://example.com:8443/path?x=1 and ws://host:4222",
        "sk-learn-style-estimators and task-runner-settings-file",
        "Asia is large; AKIA is not a word; the bearer of this note",
        "Basic usage: call the reader",
        "cannot read 'passwd': Permission denied; \"token\": unknown field",
        "at 2024-11-22 10:31:07 on 10.0.0.12:6379 (attempt 3 of 5)",
        "already [SECRET] and Bearer [TOKEN] and password=[SECRET]",
        "",
    ],
)
def test_ordinary_text_ids_and_redacted_text_survive(text: str) -> None:
    assert redactor.redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        'Authorization: Basic dXNlcjpw and {"password": "x"} and redis://:p@h',
        f"{PEM} AKIAIOSFODNN7EXAMPLE token=abc jane@example.com",
    ],
)
def test_redaction_is_idempotent(text: str) -> None:
    once = redactor.redact(text)
    assert redactor.redact(once) == once


def test_the_quick_checks_never_skip_a_rule_that_would_match() -> None:
    """Each rule's precheck and screen are only shortcuts: without them the result is the same."""
    assert redactor.redact("ring +1 23 4567 or pay with 4222222222222") == "ring [PHONE] or pay with [CARD]"
    plain = Redactor(Rule(r.name, r.pattern, r.replacement, r.accept) for r in redactor.rules)
    samples = [
        "id AKIAIOSFODNN7EXAMPLE, sk-AbCdEfGhIjKlMnOpQrSt1234, ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        'Authorization: Basic x1 {"password": "p", "Api-Key": "k"} Cookie: a=b',
        f"{PEM} postgres://u:p@h/db call +1 415-555-0132, visa 4111-1111-1111-1111",
        # non-ASCII: full-width letters, a letter that lower() lengthens, Arabic-Indic digits
        "x \uff21\uff2b\uff29\uff21 \u0130stanbul password=\u00fcn\u00efcode 4111 1111 1111 1111 "
        "\u0664\u0661\u0665-\u0665\u0665\u0665-\u0660\u0661\u0663\u0662",
        "sha 3f9a1c0e7b2d4a6f8e1c3b5d7f9a0b2c4d6e8f01 at 2024-11-22 10:31:07",
        # the fewest digits a match holds: a phone of 7, a card of 13
        "ring +1 23 4567 or pay with 4222222222222",
        # letters a case-insensitive pattern takes for i and s, which lower() keeps apart
        "Author\u0131zation: Basic dXNlcjpwYXNzd29yZA, Author\u0130zation: Basic dXNlcjpwYXNzd29yZA",
        "pa\u017f\u017fword=hunter2; pa\u017fsword is hunter22abc; --pa\u017f\u017fword Hunter22!",
        "Cook\u0130e: session=abc",
    ]
    for text in samples:
        assert redactor.redact(text) == plain.redact(text), text


# -- structures ----------------------------------------------------------------------


def test_values_under_secret_key_names_are_replaced_whole() -> None:
    value = {
        "user": "bob",
        "password": "hunter2",
        "Client-Secret": 12345,
        "aws_secret_access_key": "wJalrXUtnFEMI",
        "headers": {"Authorization": "Basic dXNlcjpw", "Accept": "text/plain", "Set-Cookie": "sid=1"},
        "credentials": {"user": "bob", "key": "abc"},
        "items": [{"api_key": "abc", "name": "x"}, ("db_password", "token here")],
        "max_tokens": 4000,
        "token_usage": {"total": 3},
        "child_session_id": "t1",
        "has_password": False,
        "token": None,
        "secret": "",
    }
    assert redactor.redact_value(value) == {
        "user": "bob",
        "password": "[SECRET]",
        "Client-Secret": "[SECRET]",
        "aws_secret_access_key": "[SECRET]",
        "headers": {"Authorization": "[SECRET]", "Accept": "text/plain", "Set-Cookie": "[SECRET]"},
        "credentials": "[SECRET]",
        "items": [{"api_key": "[SECRET]", "name": "x"}, ("db_password", "token here")],
        "max_tokens": 4000,
        "token_usage": {"total": 3},
        "child_session_id": "t1",
        "has_password": False,
        "token": None,
        "secret": "",
    }
    assert value["password"] == "hunter2"  # a copy: the original is untouched


def test_strings_inside_structures_are_redacted_by_pattern() -> None:
    value = ("see redis://:pw@h", ["AKIAIOSFODNN7EXAMPLE"], {"note": '{"password": "x"}'}, {"a@b.io"})
    assert redactor.redact_value(value) == (
        "see redis://:[SECRET]@h",
        ["[API_KEY]"],
        {"note": '{"password": "[SECRET]"}'},
        {"[EMAIL]"},
    )


def test_deep_and_cyclic_structures_end() -> None:
    deep: list[object] = []
    node = deep
    for _ in range(10_000):
        child: list[object] = []
        node.append(child)
        node = child
    node.append("password=x")
    out = redactor.redact_value(deep)
    for _ in range(MAX_DEPTH):
        assert isinstance(out, list)
        (out,) = out
    assert out == "[TOO_DEEP]"
    cyclic: dict[str, object] = {"token": "abc", "name": "n"}
    cyclic["self"] = cyclic
    walked = redactor.redact_value(cyclic)
    assert walked["token"] == "[SECRET]" and walked["self"]["self"]["name"] == "n"


class _Broken(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("no")


def test_odd_types_pass_through_and_never_raise() -> None:
    marker = object()
    value = {1: "a@b.io", None: 2, (1, 2): b"password=x", "n": 1.5, "o": marker, "f": frozenset({"x"})}
    out = redactor.redact_value(value)
    assert out == {1: "[EMAIL]", None: 2, (1, 2): b"password=x", "n": 1.5, "o": marker, "f": frozenset({"x"})}
    assert redactor.redact_value(_Broken(a=1)) == "[SECRET]"
    assert redactor.redact_value(marker) is marker and redactor.redact_value(None) is None


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("X-Api-Key", True),
        ("apikey", True),
        ("client.secret", True),
        ("aws_secret_access_key", True),
        ("AccessKey", True),
        ("Authorization", True),
        ("Proxy-Authorization", True),
        ("set-cookie", True),
        ("refresh_token", True),
        ("private_key", True),
        ("session_id", True),
        ("pwd", True),
        ("max_tokens", False),
        ("token_usage", False),
        ("tokens", False),
        ("child_session_id", False),
        ("primary_key", False),
        ("secret_name", False),
        ("accessKeyId", False),
        ("passenger", False),
    ],
)
def test_secret_key_names(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


# -- log records ---------------------------------------------------------------------


def _record(msg: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("a2a.test", logging.WARNING, __file__, 1, msg, args or None, exc_info)


def test_log_filter_redacts_the_message_and_the_exception() -> None:
    flt = RedactingFilter(redactor)
    try:
        raise RuntimeError("connect redis://:hunter2@cache failed")
    except RuntimeError as exc:
        record = _record("%s: %r failed: %s", "reader", "read", '{"password": "hunter2"}', exc=exc)
    assert flt.filter(record) is True
    text = logging.Formatter().format(record)
    assert "hunter2" not in text
    assert 'reader: \'read\' failed: {"password": "[SECRET]"}' in text
    assert "redis://:[SECRET]@cache" in text and "Traceback" in text


def test_log_filter_never_raises() -> None:
    flt = RedactingFilter(redactor)
    bad_args = _record("%d items for password=%s", "not a number", "hunter2")
    assert flt.filter(bad_args) is True
    assert "hunter2" not in bad_args.getMessage()

    def boom(m: re.Match[str]) -> str:
        raise ValueError("rule failed")

    failing = RedactingFilter(Redactor([Rule("boom", re.compile("x"), boom)]))
    record = _record("x marks password=hunter2")
    assert failing.filter(record) is True
    assert "hunter2" not in record.getMessage()


def test_redact_is_fast_on_text_without_secrets() -> None:
    """redact() runs on every objective and error message: most of them hold no secret."""
    text = (
        "Add a one-line docstring to total_price, restock in inventory.py; keep the file compiling. "
        "Request 01J9Z3K6W8Q4N2M5T7V0X1Y2B3 for conversation 6f1c2a9e-4b7d-4e0a-9c3b-2d5f8e7a1b0c."
    )
    best = min(timeit.repeat(lambda: redactor.redact(text), number=200, repeat=5)) / 200
    assert best < 100e-6  # about 8 µs on a laptop; generous for a loaded CI machine


# -- prose that names secrets, and call parameters -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "POST /login checks the user's password, returns a session cookie': list the endpoints…",
        "token: we should rotate it",
        "password = os.environ['DB_PASSWORD'] and token = get_token(client)",
        "password: ${DB_PASSWORD}, api_key: <your-key>",
    ],
)
def test_prose_and_code_naming_secrets_survive(text: str) -> None:
    assert redactor.redact(text) == text


def test_findings_name_the_kind_of_each_redaction() -> None:
    found: dict[str, int] = {}
    out = redactor.redact("mail jane@example.com key AKIAIOSFODNN7EXAMPLE password=x", found)
    assert out == "mail [EMAIL] key [API_KEY] password=[SECRET]"
    assert found == {"email": 1, "api_key": 1, "secret_assignment": 1}


def test_params_keep_their_keys_and_types() -> None:
    params = {
        "to": "jane@example.com",
        "password": 123456,
        "credentials": {"user": "bob", "key": "abc", "port": 5432, "tags": ["x", ""]},
        "api_key": "sk-proj-AbCdEfGhIjKlMnOpQr12",
        "notes": ["call +1 415-555-0132", None, True, 2.5],
        "max_tokens": 4000,
    }
    found: dict[str, int] = {}
    out = redactor.redact_params(params, found)
    assert out == {
        "to": "[EMAIL]",
        "password": 123456,
        "credentials": {"user": "[SECRET]", "key": "[SECRET]", "port": 5432, "tags": ["[SECRET]", ""]},
        "api_key": "[SECRET]",
        "notes": ["call [PHONE]", None, True, 2.5],
        "max_tokens": 4000,
    }
    assert found == {"email": 1, "secret_field": 4, "phone": 1}
    again: dict[str, int] = {}
    assert redactor.redact_params(out, again) == out and again == {}
    assert params["to"] == "jane@example.com"  # a copy: the original is untouched


def test_session_ids_in_params_are_ids_not_secrets() -> None:
    params = {"session_id": "s-1", "sessionId": "s-2", "frame": {"session_id": "s-3"}}
    assert redactor.redact_params(params) == params
    assert redactor.redact_value(params)["session_id"] == "[SECRET]"
