"""The demo roster (seed 003): planner, reader, writer, reviewer.

Deterministic, no LLM: they read and edit Python files in a workspace directory. The
planner delegates the edit to whichever instance offers ``code.edit`` (registry routing),
handing over only the last user messages and the file concerned; the writer asks the
reader for the file (a direct peer call) and checks each tool against the roster
(``roster.yaml``) before using it; the reviewer's attempt to call the planner is refused
by the roster.

Each agent works in the workspace its own process configuration names (see
:func:`~a2a.demo.workspace.workspace_root`); callers name files inside it. A ``workspace``
parameter is still accepted from older callers but must be that same directory.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import anyio

from a2a import (
    A2AError,
    Agent,
    AgentCapability,
    Artifact,
    Context,
    ContextFilter,
    DelegationResult,
    by_capability,
)
from a2a.errors import InvalidParams, PermissionDenied

from .workspace import (
    check_glob,
    confine,
    functions_missing_docstrings,
    inside,
    suggest_docstring,
    workspace_root,
)

__all__ = ["planner", "reader", "reviewer", "roster", "writer"]

_PATH_PARAMS = {
    "type": "object",
    "required": ["path"],
    "properties": {"workspace": {"type": "string"}, "path": {"type": "string"}},
}


def _root(params: dict[str, Any]) -> Path:
    """This agent's workspace; a caller's ``workspace`` parameter may only name the same one."""
    root = workspace_root()
    given = params.get("workspace")
    if given is not None and (
        not isinstance(given, str) or "\0" in given or os.path.realpath(given) != str(root)
    ):
        raise PermissionDenied("the workspace is set by the agent's configuration, not by callers")
    return root


def _file(params: dict[str, Any]) -> anyio.Path:
    """The file ``params["path"]`` names inside this agent's workspace."""
    return anyio.Path(confine(_root(params), params["path"]))


def _failed(verb: str, params: dict[str, Any], exc: OSError) -> InvalidParams:
    # Said without the workspace's absolute path, which the OS error message holds.
    return InvalidParams(f"cannot {verb} {params['path']!r}: {exc.strerror or type(exc).__name__}")


async def _read(params: dict[str, Any]) -> str:
    file = _file(params)
    try:
        return await file.read_text()
    except OSError as exc:
        raise _failed("read", params, exc) from None


async def _write(params: dict[str, Any], text: str) -> None:
    file = _file(params)
    try:
        await file.write_text(text)
    except OSError as exc:
        raise _failed("write", params, exc) from None


# -- reader ------------------------------------------------------------------------

reader = Agent(
    "reader",
    description="Explores the workspace and extracts context; never edits.",
    capabilities=[
        AgentCapability(id="code.read", category="code", proficiency=0.9, required_tools=["read_file"]),
        AgentCapability(id="code.search", category="search", proficiency=0.8),
    ],
)


@reader.action(
    "scan",
    input_schema={
        "type": "object",
        "properties": {"workspace": {"type": "string"}, "glob": {"type": "string"}},
    },
)
async def scan(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """List source files and the public functions that lack docstrings."""
    ctx.authorize_tool("glob")
    root = _root(params)
    pattern = check_glob(params.get("glob", "*.py"))
    files = {}
    for path in sorted([p async for p in anyio.Path(root).glob(pattern)]):
        # A symlink in the workspace may point anywhere: only what really lies inside counts.
        if not inside(root, str(await path.resolve())) or not await path.is_file():
            continue
        files[path.name] = functions_missing_docstrings(await path.read_text())
    return {"files": files}


@reader.action("read", input_schema=_PATH_PARAMS)
async def read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """Return a file's text."""
    ctx.authorize_tool("read_file")
    text = await _read(params)
    return {"path": params["path"], "text": text, "lines": text.count("\n")}


# -- writer ------------------------------------------------------------------------

writer = Agent(
    "writer",
    description="Makes precise code changes and checks they compile.",
    capabilities=[
        AgentCapability(id="code.edit", category="code", proficiency=0.95, required_tools=["write_file"]),
    ],
)


@writer.action(
    "add_docstrings",
    input_schema={
        "type": "object",
        "required": ["path", "functions"],
        "properties": {
            "workspace": {"type": "string"},
            "path": {"type": "string"},
            "functions": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
    },
)
async def add_docstrings(ctx: Context, params: dict[str, Any]) -> DelegationResult:
    """Insert a docstring into each named function, then check the file still compiles."""
    _file(params)  # refuse a path outside the workspace before anything else
    current = await ctx.call("reader", "read", {"path": params["path"]})
    source: str = current["text"]
    wanted = set(params["functions"])
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    added = []
    # Insert bottom-up so earlier line numbers stay valid.
    for node in sorted(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted),
        key=lambda n: n.lineno,
        reverse=True,
    ):
        if ast.get_docstring(node) is not None:
            continue
        first = node.body[0]
        indent = " " * first.col_offset
        doc = suggest_docstring(node.name, [a.arg for a in node.args.args])
        lines.insert(first.lineno - 1, f'{indent}"""{doc}"""\n')
        added.append(f"{node.name}: {doc}")
    added.reverse()
    new_source = "".join(lines)
    ctx.authorize_tool("compile")
    compile(new_source, params["path"], "exec")
    ctx.authorize_tool("write_file")
    await _write(params, new_source)
    received = ctx.request.delegation.context if ctx.request.delegation else None
    facts = []
    if received is not None:
        facts.append(f"context received: {len(received.messages)} message(s), {received.total_tokens} tokens")
    return DelegationResult(
        summary=f"added {len(added)} docstring(s) to {params['path']}; it compiles",
        result="\n".join(added),
        artifacts=[Artifact(type="file", value=params["path"], label="edited file")],
        new_facts=facts,
        confidence=90,
    )


# -- reviewer ----------------------------------------------------------------------

reviewer = Agent(
    "reviewer",
    description="Validates changes for correctness and style.",
    capabilities=[AgentCapability(id="code.review", category="analysis", proficiency=0.9)],
)


@reviewer.action("review", input_schema=_PATH_PARAMS)
async def review(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """PASS when the file compiles and every public function has a docstring."""
    ctx.authorize_tool("read_file")
    source = await _read(params)
    problems = []
    try:
        ctx.authorize_tool("compile")
        compile(source, params["path"], "exec")
    except SyntaxError as exc:
        problems.append(ctx.services.redactor.redact(f"does not compile: {exc}"))
    else:
        problems += [
            f"{f['name']} (line {f['line']}) has no docstring" for f in functions_missing_docstrings(source)
        ]
    verdict = "FAIL" if problems else "PASS"
    escalation = None
    try:
        # The roster lets a reviewer invoke only the writer; this call is refused.
        await ctx.call("planner", "replan", {"reason": f"review {verdict}"})
    except A2AError as exc:
        escalation = exc.code
    return {"path": params["path"], "verdict": verdict, "problems": problems, "escalation": escalation}


# -- planner -----------------------------------------------------------------------

planner = Agent(
    "planner",
    description="Decomposes the user's task and delegates to specialists.",
    capabilities=[AgentCapability(id="plan", category="analysis", proficiency=0.9)],
)


@planner.action(
    "run",
    input_schema={
        "type": "object",
        "required": ["task"],
        "properties": {"task": {"type": "string"}, "workspace": {"type": "string"}},
    },
)
async def run(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """Find what is missing, have it written, have it reviewed."""
    workspace = str(_root(params))
    found = await ctx.call("reader", "scan", {})
    edits = []
    for path, missing in found["files"].items():
        if not missing:
            continue
        names = [f["name"] for f in missing]
        response = await ctx.delegate(
            by_capability("code.edit"),
            f"Add a one-line docstring to {', '.join(names)} in {path}; keep the file compiling.",
            objective=f"docstrings for {path}",
            action="add_docstrings",
            input={"path": path, "functions": names},
            context=ContextFilter(
                last_messages=3, roles=["user"], include_workspace=True, workspace_files=[path]
            ),
            workspace=workspace,
            max_context_tokens=400,
            allowed_tools=["read_file", "write_file", "compile"],
            allow_nested_calls=True,  # the writer reads the file through the reader
        )
        edits.append(
            {
                "path": path,
                "summary": response.summary,
                "facts": response.new_facts,
                "thread": response.child_session_id,
            }
        )
    reviews = [await ctx.call("reviewer", "review", {"path": e["path"]}) for e in edits]
    ok = all(r["verdict"] == "PASS" for r in reviews)
    return {
        "task": ctx.services.redactor.redact(params["task"]),
        "status": "done" if ok else "needs-work",
        "edits": edits,
        "reviews": reviews,
    }


@planner.action("replan")
async def replan(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """Accept a request to revise the plan."""
    reason = params.get("reason")
    if isinstance(reason, str):
        reason = ctx.services.redactor.redact(reason)
    return {"accepted": True, "reason": reason}


roster = [planner, reader, writer, reviewer]
