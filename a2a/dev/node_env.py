"""A Node.js project from the repository, installed with ``npm ci`` into a cache directory.

Interoperability tests run JavaScript clients (``tests/interop/js``) whose dependencies
are pinned by the project's ``package-lock.json``. Installing them inside the repository
would leave a ``node_modules`` tree among the sources, so :func:`ensure_node_project`
copies the project into a directory of its own, installs it there once and keeps the
copied scripts current on every call.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["ensure_node_project"]

_MANIFESTS = ("package.json", "package-lock.json")
_MARKER = ".installed-lock-sha256"


def _default_root(source: Path) -> Path:
    configured = os.environ.get("A2A_NODE_PROJECTS")
    if configured:
        return Path(configured) / source.name
    repo = Path(__file__).resolve().parents[2]
    return (repo if (repo / "pyproject.toml").is_file() else Path.cwd()) / ".node-projects" / source.name


def _digest(source: Path) -> str:
    h = hashlib.sha256()
    for name in _MANIFESTS:
        h.update(name.encode() + b"\0" + (source / name).read_bytes() + b"\0")
    return h.hexdigest()


def _is_ready(root: Path, digest: str) -> bool:
    marker = root / _MARKER
    return marker.is_file() and marker.read_text().strip() == digest and (root / "node_modules").is_dir()


def _install(source: Path, root: Path, digest: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH: install Node.js 20 or newer with npm")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for name in _MANIFESTS:
        shutil.copyfile(source / name, root / name)
    result = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=root,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0:
        tail = " | ".join((result.stdout + result.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"npm ci in {root} failed (exit {result.returncode}): {tail}")
    # Written last: a half-installed project never passes _is_ready.
    (root / _MARKER).write_text(digest + "\n")


def _sync_sources(source: Path, root: Path) -> None:
    for path in source.iterdir():
        if not path.is_file() or path.name in _MANIFESTS:
            continue
        target = root / path.name
        data = path.read_bytes()
        if target.is_file() and target.read_bytes() == data:
            continue
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        partial.write_bytes(data)
        os.replace(partial, target)


def ensure_node_project(source: Path, root: Path | None = None) -> Path:
    """The directory of an installed copy of the Node project ``source``.

    ``source`` holds ``package.json``, ``package-lock.json`` and the scripts (its files
    only, no subdirectories). ``root`` is where the copy lives; by default
    ``$A2A_NODE_PROJECTS/<name>``, else ``<repo>/.node-projects/<name>``. ``npm ci`` runs
    on first use and again whenever either manifest changes; the scripts are copied on
    every call. Concurrent callers serialise on ``<root>.lock``.
    Raises ``RuntimeError`` if npm is missing or ``npm ci`` fails (with its last lines).
    """
    source = Path(source).absolute()
    root = (Path(root) if root is not None else _default_root(source)).absolute()
    digest = _digest(source)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.with_name(root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_ready(root, digest):
            _install(source, root, digest)
        _sync_sources(source, root)
    return root
