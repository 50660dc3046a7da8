"""The demo's workspace, the confinement of its agents to it, and the source analysis they share.

Each demo agent works in one directory that its own process configuration names
(``A2A_DEMO_WORKSPACE``, else ``/workspace``, the volume the deployments mount); a caller
names files inside it and never the directory itself. :func:`confine` resolves a caller's
path against that root and refuses, with ``PermissionDenied``, any path that leaves it.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from bus.errors import PermissionDenied

__all__ = [
    "DEFAULT_WORKSPACE",
    "WORKSPACE_ENV",
    "check_glob",
    "confine",
    "functions_missing_docstrings",
    "inside",
    "make_workspace",
    "suggest_docstring",
    "workspace_root",
]

WORKSPACE_ENV = "A2A_DEMO_WORKSPACE"
DEFAULT_WORKSPACE = "/workspace"

INVENTORY = '''\
"""Stock keeping for a small shop."""


def total_price(items):
    return sum(item["price"] * item["qty"] for item in items)


def restock(items, name, qty):
    for item in items:
        if item["name"] == name:
            item["qty"] += qty
            return item
    return None


def low_stock(items, threshold=3):
    """Items with fewer than ``threshold`` units left."""
    return [item for item in items if item["qty"] < threshold]


def _format_row(item):
    return f"{item['name']:<12}{item['qty']:>4}"
'''

NOTES = """# Shop tools

Every public function in this workspace must have a docstring. A function that
returns a value on some paths and None on others says in its docstring when it
returns None.
"""


def make_workspace(root: Path) -> Path:
    """Write the demo's starting files under ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "inventory.py").write_text(INVENTORY)
    (root / "NOTES.md").write_text(NOTES)
    return root


def workspace_root(env: Mapping[str, str] | None = None) -> Path:
    """The workspace this process's demo agents work in (its real path, symlinks resolved)."""
    env = os.environ if env is None else env
    return Path(os.path.realpath(env.get(WORKSPACE_ENV) or DEFAULT_WORKSPACE))


def inside(root: Path, target: str) -> bool:
    """True when the real path ``target`` is ``root`` or below it (``root`` is a real path too)."""
    return target == str(root) or target.startswith(str(root).rstrip(os.sep) + os.sep)


def _check_name(path: object) -> str:
    # A NUL byte would make the OS see a different, shorter path than the one checked.
    if not isinstance(path, str) or not path or "\0" in path:
        raise PermissionDenied("a workspace path must be a non-empty string without NUL bytes")
    if os.path.isabs(path) or path.startswith("~"):
        raise PermissionDenied(f"{path!r} is not relative to the workspace")
    return path


def confine(root: Path, path: object) -> Path:
    """The file ``path`` names inside the workspace ``root``, with every symlink resolved.

    Raises:
        PermissionDenied: ``path`` is absolute, holds a NUL byte, or leads outside ``root``
            (through ``..`` or a symlink).
    """
    name = _check_name(path)
    target = os.path.realpath(os.path.join(root, name))
    if not inside(root, target):
        raise PermissionDenied(f"{name!r} is outside the workspace")
    return Path(target)


def check_glob(pattern: object) -> str:
    """A glob pattern that stays inside the workspace (relative, no ``..``).

    Raises:
        PermissionDenied: the pattern is absolute, holds a NUL byte or a ``..`` part.
    """
    name = _check_name(pattern)
    if ".." in PurePosixPath(name).parts:
        raise PermissionDenied(f"{name!r} leads outside the workspace")
    return name


def functions_missing_docstrings(source: str) -> list[dict[str, object]]:
    """Public top-level functions without a docstring: name, line and arguments."""
    tree = ast.parse(source)
    missing = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
            continue
        if ast.get_docstring(node) is None:
            args = [a.arg for a in node.args.args]
            missing.append({"name": node.name, "line": node.lineno, "args": args})
    return missing


def suggest_docstring(name: str, args: list[str]) -> str:
    """A deterministic one-line docstring from a function's name and arguments."""
    words = name.replace("_", " ")
    summary = words[0].upper() + words[1:]
    if args:
        summary += f" from {', '.join(args[:-1]) + ' and ' + args[-1] if len(args) > 1 else args[0]}"
    return summary + "."
