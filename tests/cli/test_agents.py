"""``a2a agents``: the registry as a table and as JSON, with the trust routing uses."""

from __future__ import annotations

import json

import pytest

from tests.helpers import AgentProcess

from .conftest import a2a

pytestmark = pytest.mark.integration


def test_json_lists_actions_with_their_input_schemas(stepper: AgentProcess, cli_env: dict[str, str]) -> None:
    out = a2a("agents", "--json", env=cli_env)
    assert out.returncode == 0, out.stderr
    (agent,) = [a for a in json.loads(out.stdout) if a["name"] == "stepper"]
    assert agent["description"] == "takes steps, saying each as it goes"
    assert agent["status"] == "available" and agent["capacity"] == 4
    assert agent["trust"] == 1.0 and agent["routable"] is True  # an agent of the deployment
    actions = {a["name"]: a for a in agent["actions"]}
    assert set(actions) == {"walk", "echo", "meta"}
    assert actions["walk"]["inputSchema"]["required"] == ["steps"]
    assert actions["walk"]["description"] == "take some steps, a progress update after each"
    assert "inputSchema" not in actions["echo"]
    assert actions["meta"]["description"].startswith("What the request carried")


def test_the_table_shows_the_trust_routing_uses(stepper: AgentProcess, cli_env: dict[str, str]) -> None:
    out = a2a("agents", env=cli_env)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "stepper-" in line)
    assert "1.00" in line and "echo, meta, walk" in line and "available" in line
