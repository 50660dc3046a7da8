"""The demo's reviewer: an agent loop whose model is a fixed review procedure (the demo has no LLM).

The procedure speaks seed 003's JSON actions like a model would, deciding each turn from
the observations it got: ``lint`` the file; on FAIL, ``call_agent`` the writer with the
problems (``thread_mode: reuse``, continuing the writer's thread of the edit) and lint
again; on PASS, ``done``. After two fixes that did not pass, or a tool or call that
failed, it ``respond``\\ s with the details instead of claiming a verdict it does not have.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from a2a import Agent, AgentCapability, Context
from a2a.loop import AgentLoop, LoopConfig, Message

from .checks import problems_in
from .files import read_text, root_of, workspace_file

__all__ = ["MAX_FIXES", "review_procedure", "reviewer"]

MAX_FIXES = 2
"""Fix requests the reviewer sends at most before it gives a FAIL."""

reviewer = Agent(
    "reviewer",
    description="Validates changes for correctness and style; asks the writer for fixes.",
    capabilities=[AgentCapability(id="code.review", category="analysis", proficiency=0.9)],
)


async def lint(ctx: Context, args: dict[str, Any]) -> dict[str, Any]:
    """The review check: the file compiles and keeps the workspace's docstring rule."""
    ctx.authorize_tool("read_file")
    params = {"path": args.get("path")}
    source = await read_text(params)
    ctx.authorize_tool("compile")
    try:
        compile(source, str(params["path"]), "exec")
    except SyntaxError as exc:
        problem = ctx.services.redactor.redact(f"does not compile: {exc}")
        return {"verdict": "FAIL", "problems": [{"function": "", "kind": "syntax", "problem": problem}]}
    problems = problems_in(source)
    return {"verdict": "FAIL" if problems else "PASS", "problems": problems}


def _say(action: dict[str, Any]) -> str:
    return json.dumps(action)


def review_procedure(path: str) -> Any:
    """The reviewer's "model" for ``path``: the next JSON action from the observations so far."""

    async def decide(messages: list[Message]) -> str:
        seen = [json.loads(m["content"]) for m in messages[2:] if m["role"] == "user"]
        checks = [o["result"] for o in seen if o.get("name") == "lint" and o["ok"]]
        fixes = [o for o in seen if o["observation"] == "call_agent" and o["ok"]]
        last = seen[-1] if seen else None
        if last is None or (last["observation"] == "call_agent" and last["ok"]):
            return _say({"action": "tool_call", "tool": "lint", "args": {"path": path}})
        if not last["ok"]:
            error = last["error"]
            return _say(
                {"action": "respond", "text": f"{last['name']} failed: {error['code']}: {error['message']}"}
            )
        verdict = checks[-1]
        if verdict["verdict"] == "PASS":
            return _say({"action": "done", "result": {"verdict": "PASS", "rounds": _rounds(seen)}})
        said = "; ".join(
            f"{p['function']} (line {p.get('line', '?')}) {p['problem']}" for p in verdict["problems"]
        )
        if len(fixes) >= MAX_FIXES:
            return _say({"action": "respond", "text": f"FAIL after {len(fixes)} fix(es): {said}"})
        return _say(
            {
                "action": "call_agent",
                "target": "writer",
                "task": f"FAIL: {said}. Fix them in {path} and keep it compiling.",
                "thread_mode": "reuse",
                "objective": f"review fixes for {path}, round {len(fixes) + 1}",
                "context": {"path": path, "problems": verdict["problems"]},
            }
        )

    return decide


def _rounds(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The review as it went: each check's verdict and problems, each fix the writer made."""
    rounds: list[dict[str, Any]] = []
    for o in seen:
        if o.get("name") == "lint" and o["ok"]:
            problems = [f"{p['function']}: {p['problem']}" for p in o["result"]["problems"]]
            rounds.append({"check": o["result"]["verdict"], "problems": problems})
        elif o["observation"] == "call_agent" and o["ok"]:
            rounds.append({"fix": o["name"], "summary": o["result"]["summary"], "thread": o.get("thread_id")})
    return rounds


@reviewer.action(
    "review",
    input_schema={
        "type": "object",
        "required": ["path"],
        "properties": {
            "workspace": {"type": "string"},
            "path": {"type": "string"},
            "thread": {"type": ["string", "null"], "description": "the writer's thread of the edit"},
        },
    },
)
async def review(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """PASS when the file compiles and keeps the docstring rule; FAIL sends it back to the writer."""
    root_of(params)
    workspace_file(params)  # refuse a path outside the workspace before the loop starts
    path = params["path"]
    loop = AgentLoop(
        review_procedure(path), tools={"lint": lint}, config=LoopConfig(max_turns=2 + 2 * MAX_FIXES)
    )
    thread = params.get("thread")
    outcome = await loop.run(ctx, f"Review {path}.", threads={"writer": thread} if thread else None)
    if outcome.status == "done":
        return {"path": path, "problems": [], **outcome.result}
    return {
        "path": path,
        "verdict": "FAIL",
        "problems": [outcome.text],
        "unresolved": msgspec.to_builtins(outcome.unresolved),
    }
