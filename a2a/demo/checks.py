"""The reviewer's checks of a Python file, the writer's repairs, and the symbols the scribe indexes.

The workspace's rule (``NOTES.md``): every public function has a docstring, and a function
that returns a value on some paths and None on others says so in its docstring, so that
no caller trips over the None.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from .workspace import functions_missing_docstrings

__all__ = ["MISSING", "NONE_UNSAID", "amend_docstring", "problems_in", "symbols"]

MISSING = "missing-docstring"
NONE_UNSAID = "none-unsaid"

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _own_nodes(node: Function) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or classes nested in it."""
    todo: list[ast.AST] = list(node.body)
    while todo:
        current = todo.pop()
        yield current
        if not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(current))


def _returns_none_sometimes(node: Function) -> bool:
    """True when the function returns a value on some path and None on another."""
    returns = [n for n in _own_nodes(node) if isinstance(n, ast.Return)]
    valued = [r for r in returns if r.value is not None and not _is_none(r.value)]
    if not valued:
        return False  # a procedure, or one that always returns None: nothing to warn about
    if len(valued) < len(returns):
        return True
    last = node.body[-1]
    return not isinstance(last, (ast.Return, ast.Raise))  # it can run off its end


def _is_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _public_functions(tree: ast.Module) -> Iterator[Function]:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield node


def problems_in(source: str) -> list[dict[str, Any]]:
    """What breaks the workspace's docstring rule: function, line, kind and a sentence each.

    Raises:
        SyntaxError: the source does not parse.
    """
    problems: list[dict[str, Any]] = [
        {"function": f["name"], "line": f["line"], "kind": MISSING, "problem": "has no docstring"}
        for f in functions_missing_docstrings(source)
    ]
    for node in _public_functions(ast.parse(source)):
        doc = ast.get_docstring(node)
        if doc is not None and "None" not in doc and _returns_none_sometimes(node):
            problems.append(
                {
                    "function": node.name,
                    "line": node.lineno,
                    "kind": NONE_UNSAID,
                    "problem": "can return None, and its docstring does not say when",
                }
            )
    return sorted(problems, key=lambda p: p["line"])


def amend_docstring(source: str, name: str, addition: str) -> str:
    """``source`` with ``addition`` appended to the one-line docstring of function ``name``."""
    for node in _public_functions(ast.parse(source)):
        if node.name != name or ast.get_docstring(node) is None:
            continue
        first = node.body[0]
        doc = ast.get_docstring(node, clean=True) or ""
        lines = source.splitlines(keepends=True)
        text = f"{doc.rstrip('.')}; {addition}"
        end = first.end_lineno or first.lineno
        lines[first.lineno - 1 : end] = [f'{" " * first.col_offset}"""{text}"""\n']
        return "".join(lines)
    return source


def symbols(source: str) -> list[dict[str, Any]]:
    """Top-level functions and classes: name, kind, line, arguments and docstring summary."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = (ast.get_docstring(node) or "").split("\n", 1)[0]
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            args = [] if isinstance(node, ast.ClassDef) else [a.arg for a in node.args.args]
            found.append({"name": node.name, "kind": kind, "line": node.lineno, "args": args, "doc": doc})
    return found
