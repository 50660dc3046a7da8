from __future__ import annotations

from pathlib import Path

import pytest

from a2a import Policy, Roster
from a2a.delegation import RosterError
from a2a.delegation.roster import UNRESTRICTED
from a2a.errors import PermissionDenied
from bus.errors import FanOutExceeded, MaxDepthExceeded
from bus.handoff import Grants
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope

YAML = """
defaults: {max_fan_out: 2}
tools:
  read_file: {mode: read}
  write_file: {mode: write}
agents:
  planner:
    {mode: read, allow_sub_agent_calls: true, can_invoke: [reader, writer], tools: [read_file], max_depth: 2}
  reader: {mode: read, tools: [read_file]}
  writer: {mode: write, allow_sub_agent_calls: true, can_invoke: [reader], tools: [read_file, write_file]}
  free: {mode: write, allow_sub_agent_calls: true, can_invoke: ["*"]}
"""

TOML = """
[tools.read_file]
mode = "read"

[agents.planner]
mode = "read"
allow_sub_agent_calls = true
can_invoke = ["reader"]
tools = ["read_file"]
"""


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    path = tmp_path / "roster.yaml"
    path.write_text(YAML)
    return Policy.from_file(path)


def env(source: str, *, depth: int = 1, fan_out: int | None = None) -> RequestEnvelope:
    return RequestEnvelope(
        message_id="m",
        source_agent_id=source,
        target_agent_id="x",
        conversation_id="c",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="a"),
        metadata=Metadata(timestamp=1, correlation_id="k", depth=depth, fan_out=fan_out),
    )


def test_yaml_and_toml_rosters_load_with_seed_defaults(policy: Policy, tmp_path: Path) -> None:
    assert policy.rules("planner").max_depth == 2 and policy.rules("planner").max_fan_out == 2
    reader = policy.rules("reader")
    assert not reader.allow_sub_agent_calls and reader.can_invoke == ()  # seed 000: off by default
    assert policy.rules("unlisted") == policy.rules("unlisted")  # falls back to defaults
    assert not policy.rules("unlisted").allow_sub_agent_calls
    path = tmp_path / "roster.toml"
    path.write_text(TOML)
    assert Roster.load(path).rules("planner").can_invoke == ("reader",)
    assert Policy().rules("anyone") is UNRESTRICTED


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agents: {a: {color: red}}", "color"),
        ("agents: {a: {tools: [nope]}}", "not declared"),
        (
            "tools: {w: {mode: write}}\nagents: {a: {mode: read, tools: [w]}}",
            "read agent but lists write tool",
        ),
        ("agents: {a: {max_fan_out: 0}}", "at least 1"),
        ("agents: {a: {capabilities: ['code review']}}", "invalid capability id"),
        ("agents: {a: {capabilities: code.read}}", "capabilities"),
        ("agents: {a: {max_instances: 0}}", "max_instances must be from 1"),
        ("surprise: 1", "expected a mapping"),
        ("agents: [", "cannot read roster"),
    ],
)
def test_bad_rosters_are_rejected_with_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "roster.yaml"
    path.write_text(text)
    with pytest.raises(RosterError, match=message):
        Roster.load(path)


def test_capabilities_left_out_are_pinned_from_what_the_code_declares() -> None:
    roster = Roster.from_dict(
        {
            "defaults": {"max_instances": 4},
            "agents": {"reader": {"capabilities": ["code.read"]}, "writer": {}, "scribe": {}},
        }
    )
    assert roster.unpinned() == ["scribe", "writer"]
    assert roster.rules("reader").max_instances == 4
    pinned = roster.pinned({"writer": ["code.edit", "code.edit"], "reader": ["code.search"], "other": ["x"]})
    assert pinned.rules("writer").capabilities == ("code.edit",)
    assert pinned.rules("reader").capabilities == ("code.read",)  # the roster's own list stays
    assert pinned.unpinned() == ["scribe"] and "other" not in pinned.agents
    with pytest.raises(RosterError, match="invalid capability id"):
        roster.pinned({"writer": ["not an id"]})


def test_caller_side_checks(policy: Policy) -> None:
    policy.check_call(None, "anything")  # outside any agent
    policy.check_call("planner", "writer")
    with pytest.raises(PermissionDenied, match="may not invoke planner"):
        policy.check_call("writer", "planner")
    with pytest.raises(PermissionDenied, match="allow_sub_agent_calls"):
        policy.check_call("reader", "writer")
    policy.check_call("free", "whoever")


def test_callee_side_rechecks_the_callers_rights(policy: Policy) -> None:
    policy.admit("reader", env("planner"))
    policy.admit("planner", env("client", depth=0))  # a user's call
    with pytest.raises(PermissionDenied):
        policy.admit("planner", env("writer"))
    with pytest.raises(MaxDepthExceeded):
        policy.admit("reader", env("planner", depth=2))
    with pytest.raises(FanOutExceeded):
        policy.admit("reader", env("planner", fan_out=3))


def test_tool_authorization_by_roster_mode_and_grants(policy: Policy) -> None:
    policy.authorize_tool("writer", "write_file", None)
    with pytest.raises(PermissionDenied, match="not authorized"):
        policy.authorize_tool("reader", "write_file", None)
    with pytest.raises(PermissionDenied, match="limited this call"):
        policy.authorize_tool("writer", "write_file", Grants(allowed_tools=["read_file"]))
    policy.authorize_tool("free", "write_file", None)
    Policy().authorize_tool("anyone", "rm_rf", None)
    with pytest.raises(PermissionDenied):
        Policy().authorize_tool("anyone", "rm_rf", Grants(allowed_tools=[]))
