"""The demo's record keepers: ``docs`` writes the API reference, ``scribe`` the end-of-run notes.

The docs agent reads the changed files itself (it may call no one) and writes ``API.md``
from their public functions. The scribe, told what the run changed, lists the workspace
through the reader (seed 003: "scribe -> reader: glob and list symbols") and writes
``codebase-index.md`` and ``last-run.md``.
"""

from __future__ import annotations

from typing import Any

from a2a import Agent, AgentCapability, Artifact, Context, DelegationResult

from .checks import symbols
from .files import read_text, write_text

__all__ = ["API_DOC", "INDEX", "LAST_RUN", "docs", "scribe"]

API_DOC = "API.md"
INDEX = "codebase-index.md"
LAST_RUN = "last-run.md"

# -- docs --------------------------------------------------------------------------

docs = Agent(
    "docs",
    description="Updates documentation to match the implementation.",
    capabilities=[AgentCapability(id="docs.write", category="custom", proficiency=0.8)],
)


@docs.action(
    "task",
    input_schema={
        "type": "object",
        "required": ["paths"],
        "properties": {"paths": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    },
)
async def document(ctx: Context, params: dict[str, Any]) -> DelegationResult:
    """Write the API reference of the named Python files: each public function and its docstring."""
    out = ["# API reference", "", "Generated from the docstrings by the docs agent.", ""]
    count = 0
    for path in params["paths"]:
        ctx.authorize_tool("read_file")
        found = [s for s in symbols(await read_text({"path": path})) if not s["name"].startswith("_")]
        out += [f"## {path}", ""]
        for s in found:
            out += [f"### `{s['name']}({', '.join(s['args'])})`", "", s["doc"] or "(undocumented)", ""]
        count += len(found)
    ctx.authorize_tool("write_file")
    await write_text({"path": API_DOC}, "\n".join(out))
    return DelegationResult(
        summary=f"{API_DOC} documents {count} public function(s) of {', '.join(params['paths'])}",
        artifacts=[Artifact(type="file", value=API_DOC, label="API reference")],
        confidence=90,
    )


# -- scribe ------------------------------------------------------------------------

scribe = Agent(
    "scribe",
    description="Keeps the codebase index and the summary of the last run.",
    capabilities=[AgentCapability(id="code.index", category="custom", proficiency=0.8)],
)


@scribe.action(
    "task",
    input_schema={
        "type": "object",
        "required": ["task", "status", "changes"],
        "properties": {
            "task": {"type": "string"},
            "status": {"type": "string"},
            "changes": {"type": "array", "items": {"type": "object", "required": ["path", "summary"]}},
            "reviews": {"type": "array", "items": {"type": "object"}},
        },
    },
)
async def index(ctx: Context, params: dict[str, Any]) -> DelegationResult:
    """Write ``codebase-index.md`` (files and symbols, from the reader) and ``last-run.md``."""
    listing = await ctx.call("reader", "symbols", {"glob": "*"})
    files: dict[str, Any] = listing["files"]
    changed = {c["path"] for c in params["changes"]}
    lines = ["# Codebase index", "", "| file | lines | changed in the last run |", "|---|---|---|"]
    lines += [f"| {name} | {f['lines']} | {'yes' if name in changed else ''} |" for name, f in files.items()]
    for name, f in files.items():
        if f["symbols"]:
            lines += ["", f"## {name}", ""]
            lines += [
                f"- `{s['name']}` ({s['kind']}, line {s['line']}){': ' + s['doc'] if s['doc'] else ''}"
                for s in f["symbols"]
            ]
    ctx.authorize_tool("write_file")
    await write_text({"path": INDEX}, "\n".join(lines) + "\n")
    await write_text({"path": LAST_RUN}, _last_run(params))
    symbol_count = sum(len(f["symbols"]) for f in files.values())
    return DelegationResult(
        summary=f"indexed {len(files)} file(s), {symbol_count} symbol(s); wrote {INDEX} and {LAST_RUN}",
        artifacts=[
            Artifact(type="file", value=INDEX, label="codebase index"),
            Artifact(type="file", value=LAST_RUN, label="last run"),
        ],
        confidence=90,
    )


def _last_run(params: dict[str, Any]) -> str:
    lines = ["# Last run", "", f"Task: {params['task']}", f"Status: {params['status']}", "", "## Changes", ""]
    lines += [f"- {c['path']}: {c['summary']}" for c in params["changes"]] or ["- nothing"]
    for review in params.get("reviews", []):
        lines += ["", f"## Review of {review.get('path')}: {review.get('verdict')}", ""]
        for step in review.get("rounds", []):
            if "check" in step:
                lines.append(f"- check: {step['check']}" + "".join(f"\n  - {p}" for p in step["problems"]))
            else:
                lines.append(f"- fix by the {step['fix']}: {step['summary']}")
    return "\n".join(lines) + "\n"
