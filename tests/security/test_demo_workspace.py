"""The demo agents stay inside the workspace their own configuration names.

The six demo agents run in a real runtime (nats-server, Redis, the demo roster) with
``A2A_DEMO_WORKSPACE`` set as ``a2a demo`` sets it. Callers try to read and write outside it:
by naming another workspace (``/etc``), an absolute path, ``..``, a symlink that points out,
a NUL byte. Each is refused with PERMISSION_DENIED; the honest task still edits the file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from a2a import Runtime, Settings
from a2a.demo.agents import roster
from a2a.demo.run import ROSTER
from a2a.demo.workspace import WORKSPACE_ENV, make_workspace
from a2a.errors import PermissionDenied

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.security]

SECRET_SOURCE = 'def stolen():\n    return "outside the workspace"\n'


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The agents' workspace, next to a directory they must never touch."""
    root = make_workspace(tmp_path / "workspace")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(SECRET_SOURCE)
    (root / "leak.py").symlink_to(outside / "secret.py")
    (root / "etc").symlink_to("/etc")
    (root / "pkg").mkdir()
    monkeypatch.setenv(WORKSPACE_ENV, str(root))
    return root


@pytest.fixture
async def rt(settings: Settings, workspace: Path) -> AsyncIterator[Runtime]:
    async with Runtime(msgspec.structs.replace(settings, roster=str(ROSTER))) as runtime:
        await runtime.serve(*roster)
        yield runtime


@pytest.mark.parametrize(
    ("action", "params"),
    [
        ("read", {"workspace": "/etc", "path": "passwd"}),
        ("read", {"path": "/etc/passwd"}),
        ("read", {"path": "../../../../../../etc/passwd"}),
        ("read", {"path": "pkg/../../outside/secret.py"}),
        ("read", {"path": "leak.py"}),  # a symlink to a file outside
        ("read", {"path": "etc/passwd"}),  # through a symlinked directory
        ("read", {"path": "inventory.py\x00/../../../etc/passwd"}),
        ("read", {"path": "~/.ssh/id_rsa"}),
        ("scan", {"workspace": "/etc", "glob": "*"}),
        ("scan", {"glob": "../outside/*.py"}),
        ("scan", {"glob": "/etc/*"}),
        ("symbols", {"workspace": "/etc", "glob": "*"}),
        ("symbols", {"glob": "../outside/*"}),
        ("symbols", {"glob": "/etc/*"}),
    ],
)
async def test_the_reader_refuses_paths_outside_its_workspace(
    rt: Runtime, action: str, params: dict[str, Any]
) -> None:
    with pytest.raises(PermissionDenied):
        await rt.call("reader", action, params)


async def test_the_writer_and_the_reviewer_refuse_paths_outside_their_workspace(
    rt: Runtime, tmp_path: Path
) -> None:
    target = tmp_path / "outside" / "secret.py"
    for params in (
        {"path": "../outside/secret.py", "functions": ["stolen"]},
        {"path": "leak.py", "functions": ["stolen"]},
        {"workspace": str(tmp_path / "outside"), "path": "secret.py", "functions": ["stolen"]},
    ):
        with pytest.raises(PermissionDenied):
            await rt.call("writer", "add_docstrings", params)
    assert target.read_text() == SECRET_SOURCE
    fix = {"problems": [{"function": "stolen", "kind": "missing-docstring"}]}
    for path in ("../outside/secret.py", "leak.py"):
        with pytest.raises(PermissionDenied):
            await rt.call("writer", "task", {"path": path, **fix})
        with pytest.raises(PermissionDenied):
            await rt.call("docs", "task", {"paths": [path]})
        with pytest.raises(PermissionDenied):
            await rt.call("reviewer", "review", {"path": path})
    assert target.read_text() == SECRET_SOURCE
    with pytest.raises(PermissionDenied):
        await rt.call("reviewer", "review", {"workspace": "/etc", "path": "passwd"})
    with pytest.raises(PermissionDenied):
        await rt.call("planner", "run", {"task": "document", "workspace": str(tmp_path / "outside")})


async def test_a_scan_skips_symlinks_that_lead_outside(rt: Runtime) -> None:
    found = await rt.call("reader", "scan", {})
    assert set(found["files"]) == {"inventory.py"}
    listed = await rt.call("reader", "symbols", {"glob": "*"})
    assert set(listed["files"]) == {"inventory.py", "NOTES.md"}


async def test_the_honest_task_still_works(rt: Runtime, workspace: Path) -> None:
    read = await rt.call("reader", "read", {"path": "pkg/../inventory.py"})
    assert read["text"].startswith('"""Stock keeping')
    same = await rt.call("reader", "read", {"workspace": str(workspace), "path": "NOTES.md"})
    assert "docstring" in same["text"]
    result = await rt.call("planner", "run", {"task": "Add a docstring to every public function"})
    assert result["status"] == "done", result
    assert '"""Total price from items."""' in (workspace / "inventory.py").read_text()
    assert [r["check"] for r in result["reviews"][0]["rounds"] if "check" in r] == ["FAIL", "PASS"]
    index = (workspace / "codebase-index.md").read_text()
    assert "| inventory.py |" in index and "leak.py" not in index and "secret" not in index
    assert "Status: done" in (workspace / "last-run.md").read_text()
    assert "### `restock(items, name, qty)`" in (workspace / "API.md").read_text()
    assert sorted(p.name for p in (workspace.parent / "outside").iterdir()) == ["secret.py"]
