"""Seed 000's project info in the workspace context: name and tech stack from the root's manifests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from a2a import ContextBuilder, ContextFilter
from a2a.delegation.context_builder import workspace_context
from a2a.delegation.project import MANIFEST_BYTES, STACK_SIZE, ProjectInfo, project_info

PYPROJECT = """\
[project]
name = "billing-service"
dependencies = ["fastapi>=0.110", "sqlalchemy[asyncio] ~= 2.0", "redis"]
"""

GO_MOD = """\
module github.com/acme/ledger

go 1.22

require github.com/google/uuid v1.6.0

require (
\tgithub.com/gin-gonic/gin v1.10.0
\tgolang.org/x/sys v0.20.0 // indirect
)
"""


def test_the_workspace_context_names_the_project_and_its_tech_stack(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "app.py").write_text("print('hi')\n")
    text = workspace_context(tmp_path)
    assert text.startswith(f"Working directory: {tmp_path}\nWorkspace structure:\n")
    assert text.endswith("\nProject: billing-service\nTech stack: Python, fastapi, sqlalchemy, redis\n")
    named = workspace_context(tmp_path, ["app.py"])
    assert "  - app.py\n" in named and "Project: billing-service\n" in named
    built = ContextBuilder().build(
        [], ContextFilter(include_workspace=True, workspace_files=["app.py"]), 4000, workspace_root=tmp_path
    )
    assert built.workspace == named


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "package.json": json.dumps({"name": "web", "dependencies": {"react": "18"}}),
                "tsconfig.json": "{}",
            },
            ProjectInfo("web", ["JavaScript", "TypeScript", "react"]),
        ),
        (
            {"go.mod": GO_MOD},
            ProjectInfo(
                "github.com/acme/ledger", ["Go", "github.com/google/uuid", "github.com/gin-gonic/gin"]
            ),
        ),
        (
            {"Cargo.toml": '[package]\nname = "agentd"\n[dependencies]\ntokio = "1"\nserde = "1"\n'},
            ProjectInfo("agentd", ["Rust", "tokio", "serde"]),
        ),
        (
            {
                "pyproject.toml": '[tool.poetry]\nname = "old"\n'
                '[tool.poetry.dependencies]\npython = "^3.11"\nhttpx = "*"\n'
            },
            ProjectInfo("old", ["Python", "httpx"]),
        ),
        (
            {"Gemfile": "source 'https://rubygems.org'\n", "package.json": json.dumps({"name": "assets"})},
            ProjectInfo("assets", ["JavaScript", "Ruby"]),
        ),
        ({"requirements.txt": "flask\n"}, ProjectInfo(None, ["Python"])),
        ({"notes.md": "no manifest here"}, None),
    ],
    ids=["package-json", "go-mod", "cargo", "poetry", "two-manifests", "language-only", "none"],
)
def test_manifests_give_the_name_languages_and_direct_dependencies(
    tmp_path: Path, files: dict[str, str], expected: ProjectInfo | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert project_info(tmp_path) == expected


def test_bad_manifests_never_fail_and_are_read_bounded(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\nname = ")  # not TOML
    (tmp_path / "package.json").write_text("[1, 2, 3]")  # JSON, not an object
    (tmp_path / "Cargo.toml").write_bytes(b"\xff\xfe not utf-8")
    (tmp_path / "go.mod").write_text("module huge\n" + "// padding\n" * MANIFEST_BYTES)
    assert project_info(tmp_path) == ProjectInfo(None, ["Python", "JavaScript", "Go", "Rust"])
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "package.json").write_text("[" * 100_000)
    (deep / "pyproject.toml").write_text('[project]\nname = "x\\ny\\tz"\ndependencies = [1, "ok", ""]\n')
    assert project_info(deep) == ProjectInfo("x y z", ["Python", "JavaScript", "ok"])  # one line


def test_the_stack_is_capped(tmp_path: Path) -> None:
    deps = json.dumps([f"dep{i}" for i in range(50)])
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "big"\ndependencies = {deps}\n')
    info = project_info(tmp_path)
    assert info is not None and len(info.tech_stack) == STACK_SIZE and info.tech_stack[0] == "Python"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symbolic links")
def test_only_regular_files_inside_the_root_are_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pyproject.toml").write_text('[project]\nname = "secret-name"\n')
    root = tmp_path / "root"
    root.mkdir()
    (root / "pyproject.toml").symlink_to(outside / "pyproject.toml")
    os.mkfifo(root / "package.json")  # reading it would block for ever
    (root / "Cargo.toml").mkdir()
    info = project_info(root)
    assert info == ProjectInfo(None, ["Python", "JavaScript", "Rust"])
    assert "secret-name" not in workspace_context(root)
