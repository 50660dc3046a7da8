"""Hostile input at every edge of the command line: one line on stderr, a non-zero status, no traceback.

The table runs the real CLI (``python -m a2a``) in subprocesses, concurrently, with a clean
environment: NATS_URL and REDIS_URL point at closed ports unless a case needs a real server.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from a2a import Settings
from a2a.cli.main import main, run_command
from a2a.core.settings import ENVIRONMENT as SETTINGS_VARIABLES
from a2a.dev.servers import NatsServer, free_port
from bus.errors import InvalidParams
from tests.helpers import ROOT

pytestmark = pytest.mark.integration

HINT = "rerun with -vv"


@dataclass(frozen=True)
class Case:
    """One command line, the status it must end with, and what its one line must name.

    ``@name@`` in an argument or variable stands for a path or server URL known at run time.
    """

    id: str
    args: tuple[str, ...]
    status: int
    names: str
    env: Mapping[str, str] = field(default_factory=dict)


def _closed_url(scheme: str) -> str:
    return f"{scheme}://127.0.0.1:{free_port()}"


def clean_env(**extra: str) -> dict[str, str]:
    """Only what Python needs, servers that refuse connections at once, and ``extra``."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "NATS_URL": _closed_url("nats"),
        "REDIS_URL": _closed_url("redis") + "/0",
        "A2A_CONNECT_TIMEOUT": "1",
        "A2A_LOG_LEVEL": "WARNING",
        "OTEL_SDK_DISABLED": "true",
        **extra,
    }


def a2a(*args: str, env: Mapping[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a2a", *args],
        env=dict(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


CALL = ("call", "echo", "echo")
SERVE = ("serve", "tests.agents:echo")
REAL = {"NATS_URL": "@nats@", "REDIS_URL": "@redis@", "A2A_NAMESPACE": "cli-inputs"}

ARGUMENTS = [
    Case("timeout-nan", ("call", "--timeout", "nan", "echo", "echo"), 2, "--timeout"),
    Case("timeout-inf", ("call", "--timeout", "inf", "echo", "echo"), 2, "--timeout"),
    Case("timeout-negative", ("call", "--timeout", "-1", "echo", "echo"), 2, "--timeout"),
    Case("timeout-huge", ("call", "--timeout", "1e12", "echo", "echo"), 2, "--timeout"),
    Case("agent-wildcard", ("call", ">", "act"), 2, "invalid agent name '>'"),
    Case("agent-dotted", ("call", "a.b", "act"), 2, "invalid agent name 'a.b'"),
    Case("action-too-long", ("call", "echo", "x" * 300), 2, "action name"),
    Case("call-no-arguments", ("call",), 2, "required"),
    Case("capability-with-space", ("call", "--capability", "a b", "act"), 2, "--capability"),
    Case("capability-empty", ("call", "--capability", "", "act"), 2, "--capability"),
    Case("params-not-json", (*CALL, "--params", "{nope"), 2, "--params"),
    Case("params-not-object", (*CALL, "--params", "[1]"), 2, "JSON object"),
    Case("params-nan", (*CALL, "--params", '{"a": NaN}'), 2, "NaN"),
    Case("params-deep", (*CALL, "--params", '{"a":' * 200 + "1" + "}" * 200), 2, "nested deeper"),
    Case("params-deeper-than-parser", (*CALL, "--params", "[" * 5000 + "]" * 5000), 2, "nested deeper"),
    Case("namespace-option", ("agents", "--namespace", "a.b"), 2, "--namespace"),
    Case("nats-url-option-empty", ("call", "--nats-url", "", "echo", "echo"), 2, "--nats-url"),
    Case("redis-url-option-http", ("agents", "--redis-url", "http://x"), 2, "--redis-url"),
    Case("health-port-range", (*SERVE, "--health-port", "70000"), 2, "--health-port"),
    Case("up-port-zero", ("up", "--nats-port", "0"), 2, "--nats-port"),
    Case("up-port-range", ("up", "--redis-port", "99999"), 2, "--redis-port"),
    Case("audit-limit-negative", ("audit", "--limit", "-1"), 2, "--limit"),
    Case("bench-calls-zero", ("bench", "--calls", "0"), 2, "--calls"),
    Case("bench-concurrency-huge", ("bench", "--concurrency", "1e9"), 2, "--concurrency"),
    Case("bench-nats-url", ("bench", "--nats-url", "notaurl"), 2, "--nats-url"),
    Case("bench-chaos-tasks-zero", ("bench", "--chaos", "--tasks", "0"), 2, "--tasks"),
    Case("bench-chaos-scenario", ("bench", "--chaos", "--scenario", "moon"), 2, "--scenario"),
    Case("bench-chaos-outage", ("bench", "--chaos", "--outage", "-1"), 2, "--outage"),
    Case(
        "bench-chaos-own-servers",
        ("bench", "--chaos", "--nats-url", "nats://127.0.0.1:4222"),
        2,
        "own servers",
    ),
    Case("demo-redis-url", ("demo", "--redis-url", "http://x"), 2, "--redis-url"),
    Case("unknown-command", ("frobnicate",), 2, "invalid choice"),
    Case("nats-config-no-roster", ("nats-config",), 2, "--roster"),
    Case("redis-config-no-roster", ("redis-config",), 2, "--roster"),
    Case(
        "nats-config-namespace", ("nats-config", "--roster", "r.yaml", "--namespace", "a.b"), 2, "namespace"
    ),
    Case("serve-no-colon", ("serve", "nomodule"), 2, "module:attribute"),
    Case("serve-missing-module", ("serve", "no_such_module:agent"), 2, "cannot import"),
    Case("serve-missing-attribute", ("serve", "tests.agents:no_such"), 2, "no attribute"),
    Case("serve-not-an-agent", ("serve", "json:dumps"), 2, "neither an Agent"),
    Case(
        "serve-import-raises",
        ("serve", "raising_module:agent"),
        1,
        "RuntimeError: broken at import",
        {"PYTHONPATH": f"{ROOT}{os.pathsep}@modules@"},
    ),
]

ENV_CASES = [
    Case("env-nats-url-not-a-url", CALL, 2, "NATS_URL", {"NATS_URL": "notaurl"}),
    Case("env-nats-url-port-range", CALL, 2, "NATS_URL", {"NATS_URL": "nats://host:99999"}),
    Case("env-nats-url-http", CALL, 2, "NATS_URL", {"NATS_URL": "http://127.0.0.1:4222"}),
    Case("env-nats-url-empty-entry", CALL, 2, "NATS_URL", {"NATS_URL": "nats://a:1,,nats://b:2"}),
    Case("env-redis-url-not-a-url", ("agents",), 2, "REDIS_URL", {"REDIS_URL": "notaurl"}),
    Case("env-redis-url-bad-db", ("agents",), 2, "REDIS_URL", {"REDIS_URL": "redis://h:6379/abc"}),
    Case("env-namespace-dotted", ("agents",), 2, "A2A_NAMESPACE", {"A2A_NAMESPACE": "a.b"}),
    Case("env-timeout-nan", CALL, 2, "A2A_TIMEOUT", {"A2A_TIMEOUT": "nan"}),
    Case("env-connect-timeout-inf", CALL, 2, "A2A_CONNECT_TIMEOUT", {"A2A_CONNECT_TIMEOUT": "inf"}),
    Case("env-heartbeat-negative", SERVE, 2, "A2A_HEARTBEAT_INTERVAL", {"A2A_HEARTBEAT_INTERVAL": "-1"}),
    Case("env-health-port-range", SERVE, 2, "A2A_HEALTH_PORT", {"A2A_HEALTH_PORT": "99999"}),
    Case("env-max-payload-negative", CALL, 2, "A2A_MAX_PAYLOAD", {"A2A_MAX_PAYLOAD": "-5"}),
    Case("env-max-hops-zero", CALL, 2, "A2A_MAX_HOPS", {"A2A_MAX_HOPS": "0"}),
    Case("env-max-depth-text", CALL, 2, "A2A_MAX_DEPTH", {"A2A_MAX_DEPTH": "deep"}),
    Case("env-max-ttl-negative", CALL, 2, "A2A_MAX_TTL", {"A2A_MAX_TTL": "-1"}),
    Case("env-max-budget-huge", CALL, 2, "A2A_MAX_BUDGET", {"A2A_MAX_BUDGET": "9" * 30}),
    Case("env-require-grants-maybe", CALL, 2, "A2A_REQUIRE_GRANTS", {"A2A_REQUIRE_GRANTS": "maybe"}),
    Case("env-audit-perhaps", CALL, 2, "A2A_AUDIT", {"A2A_AUDIT": "perhaps"}),
    Case("env-grant-keys-garbage", CALL, 2, "A2A_GRANT_KEYS", {"A2A_GRANT_KEYS": ",,!!"}),
    Case("env-identity-dotted", CALL, 2, "A2A_IDENTITY", {"A2A_IDENTITY": "a.b"}),
    Case("env-client-name-wildcard", ("agents",), 2, "A2A_CLIENT_NAME", {"A2A_CLIENT_NAME": ">"}),
    Case("env-log-level", ("agents",), 2, "A2A_LOG_LEVEL", {"A2A_LOG_LEVEL": "LOUD"}),
    Case("env-up-nats-url", ("up",), 2, "NATS_URL", {"NATS_URL": "notaurl"}),
    Case("env-demo-nats-url", ("demo",), 2, "NATS_URL", {"NATS_URL": "notaurl"}),
    Case("env-tls-ca-missing", CALL, 2, "NATS_TLS_CA=/nope", {"NATS_TLS_CA": "/nope"}),
    Case("env-roster-missing", CALL, 2, "cannot read roster /nope", {"A2A_ROSTER": "/nope"}),
    Case("env-roster-bad-value", CALL, 2, "bogus", {"A2A_ROSTER": "@bad_roster@"}),
    Case("env-roster-not-yaml", CALL, 2, "cannot read roster", {"A2A_ROSTER": "@garbage_roster@"}),
    Case("env-roster-directory", CALL, 2, "cannot read roster", {"A2A_ROSTER": "@modules@"}),
]

FILES = [
    Case("nats-config-roster-missing", ("nats-config", "--roster", "/nope"), 2, "cannot read roster"),
    Case("nats-config-roster-toml", ("nats-config", "--roster", "@bad_toml@"), 2, "cannot read roster"),
    Case(
        "nats-config-out-unwritable",
        ("nats-config", "--roster", "tests/roster.yaml", "--out", "@a_file@/x"),
        1,
        "Not a directory",
    ),
    Case("schemas-out-is-a-file", ("schemas", "--out", "@a_file@"), 1, "File exists"),
    # A roster agent whose capabilities neither the roster nor its code (--agents) gives.
    Case("nats-config-unpinned", ("nats-config", "--roster", "@unpinned_roster@"), 2, "reader lists no"),
    Case(
        "redis-config-unpinned",
        ("redis-config", "--roster", "@unpinned_roster@", "--agents", "tests.agents:echo"),
        2,
        "or name its code with --agents module:attr",
    ),
    Case(
        "redis-config-agents-missing",
        ("redis-config", "--roster", "tests/security/roster.yaml", "--agents", "no_such_module:x"),
        2,
        "cannot import 'no_such_module'",
    ),
    Case("roster-bad-capability", ("nats-config", "--roster", "@bad_cap_roster@"), 2, "invalid capability"),
    Case("roster-no-instances", ("redis-config", "--roster", "@no_instances_roster@"), 2, "max_instances"),
]

SERVERS = [
    Case("nats-closed", CALL, 1, "UNAVAILABLE"),
    Case("serve-nats-closed", SERVE, 1, "UNAVAILABLE"),
    Case("redis-closed-agents", ("agents",), 1, "UNAVAILABLE"),
    Case("redis-closed-history", ("history", "c1"), 1, "UNAVAILABLE"),
    Case("audit-nats-closed", ("audit",), 1, "audit stream"),
    Case("auth-refused", CALL, 1, "UNAVAILABLE", {"NATS_URL": "@auth_nats@"}),
    Case("no-responders", ("call", "nobody", "act"), 1, "NO_RESPONDERS", REAL),
    Case(
        "payload-too-large",
        ("call", "nobody", "act", "--params", json.dumps({"text": "x" * 200})),
        1,
        "PAYLOAD_TOO_LARGE",
        {**REAL, "A2A_MAX_PAYLOAD": "100"},
    ),
    Case("history-unknown", ("history", "no-such-conversation"), 1, "no history", REAL),
]

CASES = {case.id: case for case in [*ARGUMENTS, *ENV_CASES, *FILES, *SERVERS]}
assert len(CASES) == len(ARGUMENTS) + len(ENV_CASES) + len(FILES) + len(SERVERS), "duplicate case ids"

# Starting Python and importing the runtime costs most of a second of CPU per process, so
# one case of each kind runs as a real process and its variants run `main()` in this one.
INLINE = {
    "timeout-inf",
    "timeout-huge",
    "params-not-object",
    "up-port-zero",
    "bench-concurrency-huge",
    "redis-config-no-roster",
    "serve-missing-attribute",
    "env-nats-url-http",
    "env-connect-timeout-inf",
    "nats-config-out-unwritable",
    "agent-dotted",
    "action-too-long",
    "call-no-arguments",
    "capability-empty",
    "params-nan",
    "params-deep",
    "redis-url-option-http",
    "up-port-range",
    "bench-calls-zero",
    "bench-nats-url",
    "bench-chaos-tasks-zero",
    "bench-chaos-scenario",
    "bench-chaos-outage",
    "bench-chaos-own-servers",
    "demo-redis-url",
    "unknown-command",
    "nats-config-no-roster",
    "nats-config-namespace",
    "serve-no-colon",
    "env-nats-url-empty-entry",
    "env-redis-url-bad-db",
    "env-timeout-nan",
    "env-health-port-range",
    "env-max-hops-zero",
    "env-max-depth-text",
    "env-max-budget-huge",
    "env-audit-perhaps",
    "env-identity-dotted",
    "env-client-name-wildcard",
    "env-up-nats-url",
    "env-demo-nats-url",
    "env-tls-ca-missing",
    "env-roster-bad-value",
    "env-roster-directory",
    "nats-config-roster-missing",
    "nats-config-roster-toml",
    "schemas-out-is-a-file",
    "redis-config-unpinned",
    "redis-config-agents-missing",
    "roster-bad-capability",
    "roster-no-instances",
    "redis-closed-history",
    "history-unknown",
}
assert set(CASES) >= INLINE
PROCESS_CASES = [case_id for case_id in CASES if case_id not in INLINE]


def _fill(text: str, values: Mapping[str, str]) -> str:
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    return text


@pytest.fixture(scope="module")
def places(
    tmp_path_factory: pytest.TempPathFactory, nats_url: str, redis_url: str
) -> Iterator[dict[str, str]]:
    """What the ``@name@`` placeholders stand for: broken files and running servers."""
    tmp = tmp_path_factory.mktemp("cli-inputs")
    (tmp / "bad.yaml").write_text("agents: {x: {mode: bogus}}\n")
    (tmp / "garbage.yaml").write_text(": : :\n  - [")
    (tmp / "bad.toml").write_text("x = \n")
    (tmp / "unpinned.yaml").write_text("agents: {reader: {}, writer: {capabilities: [code.edit]}}\n")
    (tmp / "bad_cap.yaml").write_text("agents: {reader: {capabilities: ['code read']}}\n")
    (tmp / "no_instances.yaml").write_text("agents: {reader: {capabilities: [], max_instances: 0}}\n")
    (tmp / "file").write_text("not a directory\n")
    (tmp / "modules").mkdir()
    (tmp / "modules" / "raising_module.py").write_text('raise RuntimeError("broken at import")\n')
    # A server that requires a token nobody in the table has.
    with NatsServer(extra_args=["--auth", "only-the-admin-knows"]) as auth_nats:
        yield {
            "bad_roster": str(tmp / "bad.yaml"),
            "garbage_roster": str(tmp / "garbage.yaml"),
            "bad_toml": str(tmp / "bad.toml"),
            "unpinned_roster": str(tmp / "unpinned.yaml"),
            "bad_cap_roster": str(tmp / "bad_cap.yaml"),
            "no_instances_roster": str(tmp / "no_instances.yaml"),
            "a_file": str(tmp / "file"),
            "modules": str(tmp / "modules"),
            "nats": nats_url,
            "redis": redis_url,
            "auth_nats": auth_nats.url,
        }


@pytest.fixture(scope="module")
def outcomes(places: dict[str, str]) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every process case run once, four at a time."""

    def run(case: Case) -> subprocess.CompletedProcess[str]:
        env = clean_env(**{name: _fill(value, places) for name, value in case.env.items()})
        return a2a(*(_fill(arg, places) for arg in case.args), env=env)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(PROCESS_CASES, pool.map(run, (CASES[i] for i in PROCESS_CASES)), strict=True))


def assert_one_line(case: Case, status: object, stderr: str, stdout: str) -> None:
    """The failure is one line on stderr naming the problem, with the case's exit status."""
    assert "Traceback" not in stderr, stderr
    assert status == case.status, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert HINT not in lines[0], "an expected failure must not ask for a traceback"
    assert lines[0].startswith("a2a"), lines[0]
    assert case.names in lines[0], lines[0]
    assert stdout == ""


@pytest.mark.parametrize("case_id", PROCESS_CASES)
def test_hostile_input_in_a_process_ends_with_one_line(
    case_id: str, outcomes: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    out = outcomes[case_id]
    assert_one_line(CASES[case_id], out.returncode, out.stderr, out.stdout)


@pytest.mark.parametrize("case_id", sorted(INLINE))
def test_hostile_input_inline_ends_with_one_line(
    case_id: str,
    places: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = CASES[case_id]
    for var in [*SETTINGS_VARIABLES, "A2A_LOG_LEVEL"]:
        monkeypatch.delenv(var, raising=False)
    for name, value in clean_env(**case.env).items():
        if name not in ("PATH", "PYTHONPATH"):
            monkeypatch.setenv(name, _fill(value, places))
    with pytest.raises(SystemExit) as exited:
        main([_fill(arg, places) for arg in case.args])
    out = capsys.readouterr()
    assert_one_line(case, exited.value.code, out.err, out.out)


# Ctrl-C: a listener that accepts and never answers holds the CLI in its connect step,
# so the interrupt arrives at a known point rather than after a guessed sleep.


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(30)
        yield server


@pytest.mark.parametrize("command", [("call", "echo", "echo"), ("serve", "tests.agents:echo")])
def test_ctrl_c_exits_130_quietly(silent_server: socket.socket, command: tuple[str, ...]) -> None:
    port = silent_server.getsockname()[1]
    env = clean_env(NATS_URL=f"nats://127.0.0.1:{port}", A2A_CONNECT_TIMEOUT="60")
    proc = subprocess.Popen(
        [sys.executable, "-m", "a2a", *command],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        connection, _ = silent_server.accept()
        connection.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err == "" and out == ""


def test_redis_config_reports_a_missing_roster_in_one_line() -> None:
    out = a2a("redis-config", "--roster", "/nope", env=clean_env())
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.splitlines()) == 1 and "/nope" in out.stderr


# The single place failures are reported, called in-process.


def _namespace(func: object, verbose: int = 0) -> argparse.Namespace:
    return argparse.Namespace(command="call", func=func, verbose=verbose)


def test_an_unexpected_error_prints_one_line_with_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("a bug")

    assert run_command(_namespace(broken)) == 1
    err = capsys.readouterr().err
    assert err == f"a2a call: unexpected RuntimeError: a bug ({HINT} for the traceback)\n"
    assert run_command(_namespace(broken, verbose=2)) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("a2a call: unexpected RuntimeError: a bug\n")


def test_a_typed_error_prints_code_message_and_where(capsys: pytest.CaptureFixture[str]) -> None:
    def refused(args: argparse.Namespace) -> int:
        raise InvalidParams("bad\nparams", agent="echo", hop=1, details={"path": "$.x"})

    assert run_command(_namespace(refused)) == 1
    assert capsys.readouterr().err == (
        'a2a call: INVALID_PARAMS: bad params (at agent echo, hop 1; details {"path": "$.x"})\n'
    )


def test_an_interrupt_inside_an_exception_group_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise BaseExceptionGroup("task group", [KeyboardInterrupt()])

    assert run_command(_namespace(interrupted)) == 130
    assert capsys.readouterr().err == ""


# Settings check themselves, for API users as for the CLI.


@pytest.mark.parametrize(
    ("fields", "names"),
    [
        ({"default_timeout": float("nan")}, "default_timeout"),
        ({"heartbeat_interval": 0}, "heartbeat_interval"),
        ({"connect_timeout": float("inf")}, "connect_timeout"),
        ({"max_ttl": -1.0}, "max_ttl"),
        ({"max_ttl": 1e12}, "max_ttl"),
        ({"max_budget": -1}, "max_budget"),
        ({"max_hops": 0}, "max_hops"),
        ({"max_depth": -1}, "max_depth"),
        ({"max_payload": 0}, "max_payload"),
        ({"health_port": 65536}, "health_port"),
        ({"nats_url": "notaurl"}, "nats_url"),
        ({"nats_url": ""}, "nats_url"),
        ({"nats_url": "nats://host:99999"}, "nats_url"),
        ({"nats_url": "http://host:4222"}, "nats_url"),
        ({"nats_url": "nats://:4222"}, "nats_url"),
        ({"redis_url": "notaurl"}, "redis_url"),
        ({"redis_url": "unix://"}, "redis_url"),
        ({"namespace": "a.b"}, "namespace"),
        ({"namespace": ""}, "namespace"),
        ({"identity": "a b"}, "identity"),
        ({"client_name": ">"}, "client_name"),
        ({"grant_keys": "UA,,UB"}, "grant_keys"),
        ({"nats_tls_key": "key.pem"}, "nats_tls_key"),
        ({"heartbeat_interval": "1"}, "heartbeat_interval"),
    ],
)
def test_settings_refuse_bad_values(fields: dict[str, object], names: str) -> None:
    with pytest.raises(ValueError, match=f"invalid {names}"):
        Settings(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"A2A_TIMEOUT": "nan"}, "A2A_TIMEOUT (default_timeout)"),
        ({"A2A_TIMEOUT": "soon"}, "A2A_TIMEOUT (default_timeout)"),
        ({"A2A_MAX_TTL": "-1"}, "A2A_MAX_TTL (max_ttl)"),
        ({"A2A_MAX_HOPS": "1.5"}, "A2A_MAX_HOPS (max_hops)"),
        ({"A2A_REQUIRE_GRANTS": "maybe"}, "A2A_REQUIRE_GRANTS (require_grants)"),
        ({"A2A_GRANT_KEYS": "!!"}, "A2A_GRANT_KEYS (grant_keys)"),
        ({"REDIS_URL": "notaurl"}, "REDIS_URL (redis_url)"),
        ({"NATS_URL": "nats://user:secret@:4222"}, "NATS_URL (nats_url)"),
    ],
)
def test_settings_from_env_name_the_variable(env: dict[str, str], names: str) -> None:
    with pytest.raises(ValueError, match=f"^invalid {re.escape(names)}: ") as info:
        Settings.from_env(env)
    assert "secret" not in str(info.value)


def test_settings_from_env_name_the_field_of_an_override() -> None:
    with pytest.raises(ValueError, match=r"^invalid namespace: 'a\.b'"):
        Settings.from_env({"A2A_NAMESPACE": "fine"}, namespace="a.b")


def test_good_settings_still_build() -> None:
    settings = Settings.from_env(
        {
            "NATS_URL": "nats://a:4222, tls://b:4443,ws://c,wss://d:443",
            "REDIS_URL": "unix:///run/redis.sock",
            "A2A_NAMESPACE": "prod-1",
            "A2A_REQUIRE_GRANTS": "true",
            "A2A_MAX_BUDGET": "0",
            "A2A_MAX_DEPTH": "0",
            "A2A_HEALTH_PORT": "0",
            "A2A_GRANT_KEYS": "UABC, UDEF",
        }
    )
    assert settings.require_grants and settings.max_budget == 0 and settings.name == "anon"
    assert Settings(redis_url=None, identity="edge-1").name == "edge-1"
