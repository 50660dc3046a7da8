"""``a2a call``: the result on standard output; its ids and progress on standard error, as they come."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT, AgentProcess

from .conftest import a2a

pytestmark = pytest.mark.integration


def test_progress_updates_print_as_they_arrive(stepper: AgentProcess, cli_env: dict[str, str]) -> None:
    params = json.dumps({"steps": 3, "pause": 0.5})
    proc = subprocess.Popen(
        [sys.executable, "-m", "a2a", "call", "stepper", "walk", "--params", params],
        env=cli_env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None and proc.stdout is not None
    seen: list[tuple[float, str]] = []
    for line in proc.stderr:
        seen.append((time.monotonic(), line))
    ended = time.monotonic()
    out = proc.stdout.read()
    assert proc.wait(30) == 0, seen
    progress = [(at, line) for at, line in seen if line.startswith("progress")]
    assert [json.loads(line.split(": ", 1)[1]) for _, line in progress] == [{"step": n} for n in (1, 2, 3)]
    # The first update was printed while the call still had two pauses to go.
    assert progress[0][0] < ended - 0.5
    assert json.loads(out) == {"walked": 3}
    answered = seen[-1][1]
    assert (
        answered.startswith("stepper answered in ") and "conversation " in answered and "request " in answered
    )


def test_ids_budget_hops_and_conversation_reach_the_agent(
    stepper: AgentProcess, cli_env: dict[str, str]
) -> None:
    args = ("call", "stepper", "meta", "--conversation", "conv-cli-1", "--budget", "500", "--max-hops", "3")
    out = a2a(*args, "--user", "ann", env=cli_env)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["conversation"] == "conv-cli-1" and seen["user"] == "ann"
    assert seen["budget"] == 500 and seen["maxHops"] == 3
    line = out.stderr.strip().splitlines()[-1]
    assert (
        f"conversation conv-cli-1  request {seen['correlation']}" in line
    )  # a first hop: its request names the tree


def test_json_prints_the_whole_response_envelope(stepper: AgentProcess, cli_env: dict[str, str]) -> None:
    out = a2a("call", "stepper", "walk", "--params", '{"steps": 2, "pause": 0}', "--json", env=cli_env)
    assert out.returncode == 0, out.stderr
    envelope = json.loads(out.stdout)
    assert envelope["type"] == "response" and envelope["payload"]["result"] == {"walked": 2}
    assert envelope["sourceAgentId"] == "stepper" and envelope["conversationId"]
    metadata = envelope["metadata"]
    assert metadata["correlationId"] and metadata["hopCount"] == 1
    # No --conversation: a new one, named after the call (the compact form sends it once).
    assert envelope["conversationId"] == metadata["correlationId"]
    assert out.stderr == ""  # --json: the envelope says it all


def test_quiet_prints_the_result_only(stepper: AgentProcess, cli_env: dict[str, str]) -> None:
    out = a2a("call", "stepper", "walk", "--params", '{"steps": 2, "pause": 0}', "-q", env=cli_env)
    assert out.returncode == 0 and out.stderr == ""
    assert json.loads(out.stdout) == {"walked": 2}


def test_a_failed_call_is_one_line_with_its_ids(stepper: AgentProcess, cli_env: dict[str, str]) -> None:
    out = a2a("call", "stepper", "walk", "--params", '{"steps": 99}', env=cli_env)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("a2a call: INVALID_PARAMS: ") and out.stderr.count("\n") == 1
    assert "[conversation and request " in out.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--budget", "-1"),
        ("--max-hops", "0"),
        ("--max-hops", "x"),
        ("--budget", "1e3"),
        ("--conversation", ""),
        ("--conversation", "a b"),
        ("--conversation", "x" * 300),
    ],
)
def test_bad_limits_are_usage_errors(option: str, value: str, cli_env: dict[str, str]) -> None:
    out = a2a("call", "stepper", "walk", option, value, env=cli_env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and option in out.stderr


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ('{"text": "x\\ud800"}', "surrogate"),  # valid to json, no UTF-8 text carries it
        ('{"\\udfff": 1}', "surrogate"),
        ('{"n": 1e400}', "out of range"),  # it would travel as null
        ('{"n": NaN}', "NaN"),
    ],
)
def test_params_json_cannot_carry_are_usage_errors(params: str, why: str, cli_env: dict[str, str]) -> None:
    out = a2a("call", "stepper", "walk", "--params", params, env=cli_env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and why in out.stderr, out.stderr
