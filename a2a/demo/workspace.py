"""The demo's temporary workspace and the source analysis its agents share."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["functions_missing_docstrings", "make_workspace", "suggest_docstring"]

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

Every public function in this workspace must have a docstring.
"""


def make_workspace(root: Path) -> Path:
    """Write the demo's starting files under ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "inventory.py").write_text(INVENTORY)
    (root / "NOTES.md").write_text(NOTES)
    return root


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
