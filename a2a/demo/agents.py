"""The demo roster (seed 003): planner, reader, writer, reviewer, scribe and docs.

Deterministic, no LLM: they read and edit Python files in a workspace directory. The
planner delegates the edit to whichever instance offers ``code.edit`` (registry routing),
handing over only the last user messages and the file concerned; the writer asks the
reader for the file (a direct peer call) and checks each tool against the roster
(``roster.yaml``) before using it. The reviewer (:mod:`a2a.demo.review`) runs an agent
loop: its check fails on the writer's first version, it asks the writer for a fix in the
writer's own thread, and checks again. Then the docs agent documents the change and the
scribe (:mod:`a2a.demo.records`) writes the codebase index and the run's summary.

Each agent works in the workspace its own process configuration names (see
:func:`~a2a.demo.workspace.workspace_root`); callers name files inside it. A ``workspace``
parameter is still accepted from older callers but must be that same directory.
"""

from __future__ import annotations

import ast
from typing import Any

import anyio

from a2a import (
    Agent,
    AgentCapability,
    Artifact,
    Context,
    ContextFilter,
    DelegationResult,
    by_capability,
)
from a2a.errors import InvalidParams

from .checks import MISSING, NONE_UNSAID, amend_docstring, symbols
from .files import PATH_PARAMS, read_text, root_of, workspace_file, write_text
from .records import docs, scribe
from .review import reviewer
from .workspace import check_glob, functions_missing_docstrings, inside, suggest_docstring

__all__ = ["docs", "planner", "reader", "reviewer", "roster", "scribe", "writer"]

_GLOB_PARAMS = {
    "type": "object",
    "properties": {"workspace": {"type": "string"}, "glob": {"type": "string"}},
}


async def _files(params: dict[str, Any]) -> list[anyio.Path]:
    """The files the ``glob`` parameter matches that really lie inside the workspace."""
    root = root_of(params)
    pattern = check_glob(params.get("glob", "*.py"))
    found = []
    for path in sorted([p async for p in anyio.Path(root).glob(pattern)]):
        # A symlink in the workspace may point anywhere: only what really lies inside counts.
        if inside(root, str(await path.resolve())) and await path.is_file():
            found.append(path)
    return found


# -- reader ------------------------------------------------------------------------

reader = Agent(
    "reader",
    description="Explores the workspace and extracts context; never edits.",
    capabilities=[
        AgentCapability(id="code.read", category="code", proficiency=0.9, required_tools=["read_file"]),
        AgentCapability(id="code.search", category="search", proficiency=0.8),
    ],
)


@reader.action("scan", input_schema=_GLOB_PARAMS)
async def scan(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """List source files and the public functions that lack docstrings."""
    ctx.authorize_tool("glob")
    files = {}
    for path in await _files(params):
        files[path.name] = functions_missing_docstrings(await path.read_text())
    return {"files": files}


@reader.action("symbols", input_schema=_GLOB_PARAMS)
async def list_symbols(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """List files with their size, and the top-level symbols of the Python ones."""
    ctx.authorize_tool("glob")
    files = {}
    for path in await _files({"glob": "*", **params}):
        ctx.authorize_tool("read_file")
        text = await path.read_text(errors="replace")
        try:
            found = symbols(text) if path.suffix == ".py" else []
        except SyntaxError:
            found = []
        files[path.name] = {"lines": text.count("\n"), "symbols": found}
    return {"files": files}


@reader.action("read", input_schema=PATH_PARAMS)
async def read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """Return a file's text."""
    ctx.authorize_tool("read_file")
    text = await read_text(params)
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
    workspace_file(params)  # refuse a path outside the workspace before anything else
    current = await ctx.call("reader", "read", {"path": params["path"]})
    new_source, added = _insert_docstrings(current["text"], set(params["functions"]))
    await _compile_and_write(ctx, params, new_source)
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


@writer.action(
    "task",
    input_schema={
        "type": "object",
        "required": ["path", "problems"],
        "properties": {
            "workspace": {"type": "string"},
            "path": {"type": "string"},
            "problems": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["function", "kind"],
                    "properties": {"function": {"type": "string"}, "kind": {"type": "string"}},
                },
            },
        },
    },
)
async def fix(ctx: Context, params: dict[str, Any]) -> DelegationResult:
    """Fix what a review found in a file (seed 003's reviewer → writer loop), then check it compiles."""
    workspace_file(params)
    kinds = {p["kind"] for p in params["problems"]} - {MISSING, NONE_UNSAID}
    if kinds:
        raise InvalidParams(f"the writer cannot fix {', '.join(sorted(kinds))} problems")
    current = await ctx.call("reader", "read", {"path": params["path"]})
    missing = {p["function"] for p in params["problems"] if p["kind"] == MISSING}
    source, done = _insert_docstrings(current["text"], missing)
    for name in dict.fromkeys(p["function"] for p in params["problems"] if p["kind"] == NONE_UNSAID):
        amended = amend_docstring(source, name, "None when nothing matches.")
        if amended == source:
            raise InvalidParams(f"{name} has no docstring in {params['path']} to amend")
        source = amended
        done.append(f"{name}: docstring now says when it returns None")
    await _compile_and_write(ctx, params, source)
    facts = []
    history = ctx.services.history
    if ctx.thread_id is not None and history is not None:
        earlier = await history.messages(ctx.thread_id)
        facts.append(f"thread {ctx.thread_id[:12]} continued: {len(earlier)} earlier message(s)")
    return DelegationResult(
        summary=f"fixed {len(done)} problem(s) in {params['path']}; it compiles",
        result="\n".join(done),
        artifacts=[Artifact(type="file", value=params["path"], label="edited file")],
        new_facts=facts,
        confidence=90,
    )


def _insert_docstrings(source: str, wanted: set[str]) -> tuple[str, list[str]]:
    """``source`` with a one-line docstring, made from the name and arguments, in each function named."""
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
        doc = suggest_docstring(node.name, [a.arg for a in node.args.args])
        lines.insert(first.lineno - 1, f'{" " * first.col_offset}"""{doc}"""\n')
        added.append(f"{node.name}: {doc}")
    added.reverse()
    return "".join(lines), added


async def _compile_and_write(ctx: Context, params: dict[str, Any], source: str) -> None:
    ctx.authorize_tool("compile")
    compile(source, params["path"], "exec")
    ctx.authorize_tool("write_file")
    await write_text(params, source)


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
    """Find what is missing, have it written and reviewed, documented, and the run indexed."""
    workspace = str(root_of(params))
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
    # The reviewer gets the writer's thread, so that its fix requests continue that revision chain.
    reviews = [
        await ctx.call("reviewer", "review", {"path": e["path"], "thread": e["thread"]}) for e in edits
    ]
    ok = all(r["verdict"] == "PASS" for r in reviews)
    status = "done" if ok else "needs-work"
    paths = [e["path"] for e in edits]
    result: dict[str, Any] = {
        "task": ctx.services.redactor.redact(params["task"]),
        "status": status,
        "edits": edits,
        "reviews": reviews,
    }
    changes = [{"path": e["path"], "summary": e["summary"]} for e in edits]
    if ok and paths:
        documented = await ctx.delegate(
            "docs",
            f"Update the API reference for {', '.join(paths)} to match its docstrings.",
            objective="API reference",
            input={"paths": paths},
        )
        result["docs"] = documented.summary
        changes += [{"path": a.value, "summary": documented.summary} for a in documented.artifacts]
    changed = ", ".join(c["path"] for c in changes) or "nothing"
    indexed = await ctx.delegate(
        "scribe",
        f"Task {status}. Changed {changed}. Update the codebase index.",
        objective="codebase index",
        input={"task": result["task"], "status": status, "changes": changes, "reviews": reviews},
        allow_nested_calls=True,  # the scribe lists the files through the reader
    )
    result["index"] = indexed.summary
    return result


@planner.action("replan")
async def replan(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """Accept a request to revise the plan."""
    reason = params.get("reason")
    if isinstance(reason, str):
        reason = ctx.services.redactor.redact(reason)
    return {"accepted": True, "reason": reason}


roster = [planner, reader, writer, reviewer, scribe, docs]
