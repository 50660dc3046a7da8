"""Every NATS subject of the project is built by ``bus.subjects``: routing, permissions and the
audit log cannot disagree on the layout, because nothing else writes a subject down."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import ROOT

PACKAGES = ("transports", "bus", "discovery", "a2a")
BUILDER = ROOT / "bus" / "subjects.py"

# A literal that is (the start of) a subject of the layout, or a JetStream API subject.
_KINDS = "(agent|inst|cancel|reply|notify|audit|taskq)"
_LITERAL = re.compile(rf"^(a2a\.[A-Za-z0-9_-]+\.{_KINDS}(\.|$)|\$JS\.API\.)")
# The piece of an f-string that follows a namespace root: ``{root}.inst.`` and the like.
_AFTER_ROOT = re.compile(rf"^\.{_KINDS}(\.|$)")


def subject_literals(source: str) -> Iterator[tuple[int, str]]:
    """Line and text of each subject written as a literal in ``source`` (docstrings aside)."""
    tree = ast.parse(source)
    skipped = {  # docstrings, and the pieces of f-strings (looked at whole)
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    } | {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            if any(_is_root(part) for part in parts):
                yield node.lineno, ast.unparse(node)
                continue
            for index, part in enumerate(parts):
                if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                    continue
                text = part.value
                starts = index == 0 and (
                    _LITERAL.match(text) or (text == "a2a." and len(parts) > 1) or text.startswith("$JS.")
                )
                if starts or (index > 0 and _AFTER_ROOT.match(text)):
                    yield node.lineno, ast.unparse(node)
                    break
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
            and _LITERAL.match(node.value)
        ):
            yield node.lineno, node.value


def _is_root(part: ast.expr) -> bool:
    """``{x.root}`` or ``{x.reply_root}`` in an f-string: a subject composed by hand."""
    return (
        isinstance(part, ast.FormattedValue)
        and isinstance(part.value, ast.Attribute)
        and part.value.attr in ("root", "reply_root")
    )


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from (ROOT / package).rglob("*.py")


def test_subjects_are_written_only_by_the_subject_builder() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for path in _modules()
        if path != BUILDER
        for line, text in subject_literals(path.read_text())
    ]
    assert found == []


def test_the_builder_itself_writes_the_layout() -> None:
    assert list(subject_literals(BUILDER.read_text()))  # the check sees what it looks for


def test_each_kind_of_written_subject_is_found() -> None:
    written = '''
"""Published on ``a2a.<ns>.audit.<agent>`` (a docstring is prose)."""
a = f"a2a.{namespace}.audit.>"
b = f"{root}.inst.{agent}.*.*"
c = f"$JS.API.STREAM.INFO.{stream}"
d = "a2a.default.agent.reader.client"
e = f"{subjects.reply_root}{sender}.>"
ok = ("a2a.calls", "a2a.demo.agents:planner", f"a2a-{name}", "a2a.target")
'''
    assert [line for line, _ in subject_literals(written)] == [3, 4, 5, 6, 7]
