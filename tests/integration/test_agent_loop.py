"""The agent loop against real servers: a scripted model speaks seed 003's JSON actions.

One runtime (nats-server, Redis, a roster) hosts ``lead``, whose action runs the loop with
the model each test scripts, and the peers it calls: ``helper`` (echoes what it got),
``broken`` (always fails) and ``outsider`` (the roster does not let ``lead`` call it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from a2a import Agent, Context, DelegationResult, Runtime, Settings
from a2a.errors import AgentError, InvalidParams
from a2a.loop import AgentLoop, LoopConfig, ScriptedModel

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ROSTER = """\
tools: {read_file: {mode: read}, flaky: {mode: read}, shell: {mode: write}}
agents:
  lead: {mode: read, allow_sub_agent_calls: true, can_invoke: [helper, broken], tools: [read_file, flaky]}
  helper: {mode: read, allow_sub_agent_calls: false}
  broken: {mode: read, allow_sub_agent_calls: false}
  outsider: {mode: read, allow_sub_agent_calls: false}
"""


class Lead:
    """The ``lead`` agent; each test sets its ``model`` (and ``config``) before calling it."""

    def __init__(self) -> None:
        self.model = ScriptedModel([])
        self.config = LoopConfig(max_turns=8, allow_nested_calls=False)
        self.tools_used: list[str] = []
        self.agent = Agent("lead")
        self.agent.action("work")(self.work)

    async def work(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        loop = AgentLoop(self.model, tools=TOOLS, config=self.config)
        outcome = await loop.run(ctx, params["task"])
        self.tools_used = list(ctx.tools_used)
        return msgspec.to_builtins(outcome)  # type: ignore[no-any-return]


async def read_file(ctx: Context, args: dict[str, Any]) -> dict[str, Any]:
    if args.get("path") != "app.py":
        raise InvalidParams(f"cannot read {args.get('path')!r}: no such file")
    return {"path": "app.py", "text": "def main():\n    return 1\n"}


async def flaky(ctx: Context, args: dict[str, Any]) -> str:
    raise RuntimeError("the disk is on fire")


async def shell(ctx: Context, args: dict[str, Any]) -> str:
    return "ran"


TOOLS = {"read_file": read_file, "flaky": flaky, "shell": shell}

helper = Agent("helper")


@helper.action("task")
async def helper_task(ctx: Context, params: dict[str, Any]) -> DelegationResult:
    d = ctx.request.delegation
    assert d is not None
    seen = {"task": d.task, "params": params, "thread": ctx.thread_id}
    if d.expected_outcome:
        seen |= {"expected_outcome": d.expected_outcome, "objective": d.objective}
    return DelegationResult(summary=f"did: {d.task}", result=json.dumps(seen))


broken = Agent("broken")


@broken.action("task")
async def broken_task(ctx: Context, params: dict[str, Any]) -> None:
    raise InvalidParams("stale hash for src/app.py")


outsider = Agent("outsider")


@outsider.action("task")
async def outsider_task(ctx: Context, params: dict[str, Any]) -> str:
    return "should never run"


@pytest.fixture
def lead() -> Lead:
    return Lead()


@pytest.fixture
async def rt(settings: Settings, tmp_path: Path, lead: Lead) -> AsyncIterator[Runtime]:
    roster = tmp_path / "roster.yaml"
    roster.write_text(ROSTER)
    async with Runtime(msgspec.structs.replace(settings, roster=str(roster))) as runtime:
        await runtime.serve(lead.agent, helper, broken, outsider)
        yield runtime


async def work(rt: Runtime, task: str = "do the thing") -> dict[str, Any]:
    return await rt.call("lead", "work", {"task": task}, timeout=15)  # type: ignore[no-any-return]


async def test_tools_and_delegations_in_new_and_reused_threads_then_done(rt: Runtime, lead: Lead) -> None:
    lead.model = ScriptedModel(
        [
            {"action": "tool_call", "tool": "read_file", "args": {"path": "app.py"}},
            {
                "action": "call_agent",
                "target": "helper",
                "task": "Add a docstring to main in app.py",
                "thread_mode": "new",
                "context": {"files": ["app.py:1-2"]},
            },
            # The brief's spellings (agent, text) and a reuse that names no thread.
            {"action": "call_agent", "agent": "helper", "text": "Now check it", "thread_mode": "reuse"},
            {"action": "done", "result": "docstring added and checked"},
        ]
    )
    outcome = await work(rt, "Document app.py")
    assert outcome["status"] == "done" and outcome["result"] == "docstring added and checked"
    assert outcome["turns"] == 4 and outcome["unresolved"] == []
    steps = outcome["steps"]
    assert [(s["action"], s["name"], s["ok"]) for s in steps] == [
        ("tool_call", "read_file", True),
        ("call_agent", "helper", True),
        ("call_agent", "helper", True),
    ]
    assert lead.tools_used == ["read_file"]
    first, second = (lead.model.observations()[i] for i in (1, 2))
    assert first["thread_id"] == second["thread_id"] == steps[1]["thread_id"] == steps[2]["thread_id"]
    got = json.loads(first["result"]["result"])
    assert got == {
        "task": "Add a docstring to main in app.py",
        "params": {"files": ["app.py:1-2"]},
        "thread": first["thread_id"],
    }
    assert json.loads(second["result"]["result"])["thread"] == first["thread_id"]
    read = lead.model.observations()[0]
    assert read == {
        "observation": "tool_call",
        "ok": True,
        "name": "read_file",
        "result": {"path": "app.py", "text": "def main():\n    return 1\n"},
        "turns_left": 7,
    }
    system, task = lead.model.seen[0][:2]
    assert system["role"] == "system" and '"action": "call_agent"' in system["content"]
    assert "flaky, read_file, shell" in system["content"]
    assert task == {"role": "user", "content": "Document app.py"}


async def test_a_call_carries_its_expected_outcome_to_the_callee(rt: Runtime, lead: Lead) -> None:
    """Seed 003: a delegation gives a specific task, its context and the expected outcome."""
    outcome = "a docstring on main, and app.py still imports"
    lead.model = ScriptedModel(
        [
            {
                "action": "call_agent",
                "target": "helper",
                "task": "Add a docstring to main in app.py",
                "context": {"files": ["app.py:1-2"]},
                "expected_outcome": outcome,
            },
            # The same outcome expected of another task is no loop (the objective is the cycle key).
            {
                "action": "call_agent",
                "target": "helper",
                "task": "Add one to App too",
                "expected_outcome": outcome,
            },
            {"action": "done", "result": "documented"},
        ]
    )
    result = await work(rt, "Document app.py")
    assert result["status"] == "done" and result["unresolved"] == []
    first, second = (json.loads(o["result"]["result"]) for o in lead.model.observations()[:2])
    assert first["expected_outcome"] == second["expected_outcome"] == outcome
    assert first["objective"] == "" and first["params"] == {"files": ["app.py:1-2"]}
    system = lead.model.seen[0][0]["content"]
    assert '"expected_outcome": "<what the agent should produce or verify>"' in system
    assert "always a specific task, its context and the expected outcome" in system


async def test_bad_json_and_unknown_actions_are_told_to_the_model(rt: Runtime, lead: Lead) -> None:
    lead.model = ScriptedModel(
        [
            "I think I will read the file first.",
            {"action": "dance"},
            {"action": "tool_call", "tool": "read_file", "args": {"path": "app.py"}},  # valid: a new count
            {"tool": "read_file"},
            '```json\n{"action": "respond", "text": "which file?"}\n```',
        ]
    )
    outcome = await work(rt)
    assert outcome["status"] == "respond" and outcome["text"] == "which file?"
    errors = [o["error"] for o in lead.model.observations() if not o["ok"]]
    assert [e["code"] for e in errors] == ["INVALID_ACTION"] * 3
    assert errors[0]["message"].startswith("not JSON")
    assert "dance" in errors[1]["message"] and "action" in errors[2]["message"]


async def test_too_many_invalid_replies_in_a_row_end_with_a_typed_error(rt: Runtime, lead: Lead) -> None:
    lead.model = ScriptedModel(["nope", "{}", "[1, 2]"])
    with pytest.raises(AgentError) as info:
        await work(rt)
    assert info.value.code == "AGENT_ERROR"
    assert info.value.details["reason"] == "invalid_replies" and info.value.details["turns"] == 3
    assert "within 3 invalid replies" in info.value.message


async def test_a_loop_that_never_ends_stops_at_max_turns(rt: Runtime, lead: Lead) -> None:
    lead.config = LoopConfig(max_turns=3)
    lead.model = ScriptedModel([{"action": "tool_call", "tool": "read_file", "args": {"path": "app.py"}}] * 5)
    with pytest.raises(AgentError) as info:
        await work(rt)
    assert info.value.details == {"reason": "max_turns", "turns": 3, "lastError": ""}


async def test_a_failed_tool_is_reported_and_done_is_refused_until_it_succeeds(
    rt: Runtime, lead: Lead
) -> None:
    lead.model = ScriptedModel(
        [
            {"action": "tool_call", "tool": "read_file", "args": {"path": "nope.py"}},
            {"action": "done", "result": "all good"},  # refused: read_file failed
            {"action": "tool_call", "tool": "read_file", "args": {"path": "app.py"}},
            {"action": "done", "message": "read it on the second try"},
        ]
    )
    outcome = await work(rt)
    assert outcome["status"] == "done" and outcome["result"] == "read it on the second try"
    failed, refused, _ = lead.model.observations()
    assert failed["ok"] is False and failed["error"] == {
        "code": "INVALID_PARAMS",
        "message": "cannot read 'nope.py': no such file",
    }
    assert refused["observation"] == "done" and refused["error"]["code"] == "UNRESOLVED_FAILURE"
    assert "read_file (INVALID_PARAMS)" in refused["error"]["message"]


async def test_tools_not_given_not_allowed_or_raising_are_error_observations(rt: Runtime, lead: Lead) -> None:
    lead.model = ScriptedModel(
        [
            {"action": "tool_call", "tool": "rm_rf", "args": {}},
            {"action": "tool_call", "tool": "shell", "args": {"command": "ls"}},  # not in lead's roster
            {"action": "tool_call", "tool": "flaky"},
            {"action": "done", "result": "finished"},  # refused: three failures unresolved
            {"action": "respond", "text": "rm_rf, shell and flaky failed"},
        ]
    )
    outcome = await work(rt)
    assert outcome["status"] == "respond"
    assert [(s["name"], s["error_code"]) for s in outcome["unresolved"]] == [
        ("rm_rf", "UNKNOWN_TOOL"),
        ("shell", "PERMISSION_DENIED"),
        ("flaky", "AGENT_ERROR"),
    ]
    observed = lead.model.observations()
    assert observed[2]["error"] == {"code": "AGENT_ERROR", "message": "RuntimeError: the disk is on fire"}
    assert observed[3]["error"]["code"] == "UNRESOLVED_FAILURE"
    assert lead.tools_used == ["flaky"]  # authorized (then it raised); rm_rf and shell never were


async def test_failed_and_refused_calls_are_error_observations(rt: Runtime, lead: Lead) -> None:
    lead.model = ScriptedModel(
        [
            {"action": "call_agent", "target": "broken", "task": "Replace block at line 3"},
            {"action": "call_agent", "target": "outsider", "task": "Help"},
            {"action": "call_agent", "target": "helper", "task": "Continue", "thread_mode": "reuse"},
            {"action": "call_agent", "target": "", "task": "To no one"},
            {"action": "respond", "text": "broken: stale hash; outsider: not allowed"},
        ]
    )
    outcome = await work(rt)
    assert outcome["status"] == "respond"
    errors = [o["error"] for o in lead.model.observations()]
    assert errors[0]["code"] == "INVALID_PARAMS" and "stale hash" in errors[0]["message"]
    assert errors[1]["code"] == "PERMISSION_DENIED"
    assert errors[2]["code"] == "INVALID_PARAMS" and "no earlier thread with helper" in errors[2]["message"]
    assert errors[3] == {"code": "INVALID_PARAMS", "message": "call_agent needs a target and a task"}
    assert [s["name"] for s in outcome["unresolved"]] == ["broken", "outsider", "helper"]


async def test_a_model_that_fails_ends_the_task_with_a_typed_error(rt: Runtime, lead: Lead) -> None:
    lead.model = ScriptedModel([{"action": "tool_call", "tool": "read_file", "args": {"path": "app.py"}}])
    with pytest.raises(AgentError, match="the model of lead failed: LookupError"):
        await work(rt)
