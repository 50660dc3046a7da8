"""A workspace's project info (seed 000): its name and tech stack, from the manifests at its root.

Reads ``pyproject.toml``, ``package.json``, ``go.mod`` and ``Cargo.toml`` (name, language,
direct dependencies) and notes the language of a few other well-known build files. Only
regular files inside the root are read, each at most :data:`MANIFEST_BYTES`; a file that
is missing, too big, unreadable or malformed gives what its presence says (the language)
or nothing: reading a workspace's project never fails.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MANIFEST_BYTES", "STACK_SIZE", "ProjectInfo", "project_info"]

MANIFEST_BYTES = 256 * 1024
"""A manifest larger than this is not read (its language still counts)."""
STACK_SIZE = 8
"""Entries of the tech stack at most: the languages first, then direct dependencies."""
_TEXT = 100
"""Characters of a name or a dependency at most."""


@dataclass(frozen=True)
class ProjectInfo:
    """What the workspace's manifests say: the project's name (None: none gives one) and its stack."""

    name: str | None = None
    tech_stack: list[str] = field(default_factory=list)

    def text(self) -> str:
        """``Project: name`` and ``Tech stack: a, b`` lines, those that have something to say."""
        lines = [f"Project: {self.name}"] if self.name else []
        if self.tech_stack:
            lines.append(f"Tech stack: {', '.join(self.tech_stack)}")
        return "".join(f"{line}\n" for line in lines)


_Parsed = tuple[str | None, list[str], list[str]]
"""A manifest's name, extra languages, and direct dependencies."""

_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _clean(value: Any) -> str | None:
    """A name as one short line, or None for anything that is not a non-empty string."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())[:_TEXT]
    return text or None


def _strings(values: Iterable[Any]) -> list[str]:
    return [s for s in (_clean(v) for v in values) if s is not None]


def _table(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def _pyproject(text: str) -> _Parsed:
    data = tomllib.loads(text)
    project, poetry = _table(data, "project"), _table(_table(data, "tool"), "poetry")
    requirements = project.get("dependencies")
    deps: list[str] = []
    if isinstance(requirements, list):
        deps = [m.group(1) for r in requirements if isinstance(r, str) and (m := _REQUIREMENT.match(r))]
    deps += [k for k in _table(poetry, "dependencies") if k.lower() != "python"]
    return _clean(project.get("name")) or _clean(poetry.get("name")), [], _strings(deps)


def _package_json(text: str) -> _Parsed:
    data = json.loads(text)
    if not isinstance(data, dict):
        return None, [], []
    deps = list(_table(data, "dependencies"))
    typed = "typescript" in _table(data, "devDependencies") or "typescript" in deps
    return _clean(data.get("name")), ["TypeScript"] if typed else [], _strings(deps)


def _go_mod(text: str) -> _Parsed:
    name, deps, block = None, [], False
    for raw in text.splitlines():
        line = raw.split("//")[0].strip() if "// indirect" not in raw else ""
        words = line.split()
        if words[:1] == ["module"] and len(words) > 1:
            name = words[1]
        elif line.replace(" ", "") == "require(":
            block = True
        elif block and line == ")":
            block = False
        elif block and words:
            deps.append(words[0])
        elif words[:1] == ["require"] and len(words) > 2:
            deps.append(words[1])
    return _clean(name), [], _strings(deps)


def _cargo(text: str) -> _Parsed:
    data = tomllib.loads(text)
    return _clean(_table(data, "package").get("name")), [], _strings(_table(data, "dependencies"))


_MANIFESTS: tuple[tuple[str, str, Callable[[str], _Parsed] | None], ...] = (
    ("pyproject.toml", "Python", _pyproject),
    ("package.json", "JavaScript", _package_json),
    ("go.mod", "Go", _go_mod),
    ("Cargo.toml", "Rust", _cargo),
    ("tsconfig.json", "TypeScript", None),
    ("setup.py", "Python", None),
    ("requirements.txt", "Python", None),
    ("Gemfile", "Ruby", None),
    ("pom.xml", "Java", None),
    ("build.gradle", "Java", None),
    ("build.gradle.kts", "Kotlin", None),
    ("composer.json", "PHP", None),
    ("mix.exs", "Elixir", None),
)
"""Manifests in the order they are read: the first name found is the project's."""


def _read(real_root: str, path: Path) -> str | None:
    """The text of a regular file inside ``real_root`` of at most MANIFEST_BYTES, or None."""
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        return None
    try:  # non-blocking: a FIFO put in the manifest's place must not hang the delegation
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MANIFEST_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MANIFEST_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MANIFEST_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def project_info(root: str | os.PathLike[str]) -> ProjectInfo | None:
    """The project at ``root`` as its manifests describe it; None when it has none."""
    root_path = Path(root)
    real_root = os.path.realpath(root_path)
    name: str | None = None
    languages: list[str] = []
    deps: list[str] = []
    for filename, language, parse in _MANIFESTS:
        path = root_path / filename
        if not os.path.lexists(path):
            continue
        languages.append(language)
        text = _read(real_root, path) if parse is not None else None
        if text is None or parse is None:
            continue
        try:
            found, more, direct = parse(text)
        except (ValueError, TypeError, AttributeError, RecursionError):  # malformed: its presence counts
            continue
        name = name or found
        languages.extend(more)
        deps.extend(direct)
    if not languages:
        return None
    stack = list(dict.fromkeys(languages + deps))[:STACK_SIZE]
    return ProjectInfo(name=name, tech_stack=stack)
