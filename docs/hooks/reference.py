"""MkDocs hook: the CLI reference, rendered from the ``a2a`` command's own parser at build time.

A page holding the line ``<!-- cli-reference -->`` gets, in its place, the ``--help`` text of
``a2a`` and of every subcommand (``a2a session start``, ``a2a task wait``, ...), so the
reference cannot drift from the code. ``python docs/hooks/reference.py`` prints the same text.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"
WIDTH = "80"
"""Columns the help text is wrapped to, whatever the terminal building the site."""


def commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``("a2a", parser)``, then every subcommand's name and parser, depth first, in order."""
    from a2a.cli.main import build_parser

    def walk(name: str, parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    yield from walk(f"{name} {sub}", subparser)

    yield from walk("a2a", build_parser())


def render() -> str:
    """The reference as Markdown: one section per command, its help text in a fence."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        sections = []
        for name, parser in commands():
            level = "#" * min(2 + name.count(" "), 4)
            sections.append(f"{level} `{name}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
        return "\n".join(sections)
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs event: put the rendered reference where the marker is."""
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown


if __name__ == "__main__":
    print(render())
