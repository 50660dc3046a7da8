"""A separate virtual environment with the public ``a2a-sdk``, for interoperability tests.

The SDK installs a top-level ``a2a`` package of its own, which clashes with this project's,
so it never shares an environment with it: tests run SDK programs with the interpreter
returned by :func:`ensure_sdk_python`.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["SDK_REQUIREMENTS", "ensure_sdk_python"]

SDK_REQUIREMENTS = ("a2a-sdk[http-server]==1.3.*", "uvicorn", "httpx")
"""What the SDK environment holds; changing it rebuilds existing environments."""

_MARKER = "a2a-sdk-requirements.txt"
_SDK_DIST_GLOB = "a2a_sdk-1.3.*.dist-info"


def _default_location() -> Path:
    configured = os.environ.get("A2A_SDK_VENV")
    if configured:
        return Path(configured)
    repo = Path(__file__).resolve().parents[2]
    return (repo if (repo / "pyproject.toml").is_file() else Path.cwd()) / ".sdk-venv"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _is_ready(venv: Path) -> bool:
    marker = venv / _MARKER
    if not _python(venv).is_file() or not marker.is_file():
        return False
    if marker.read_text().splitlines() != list(SDK_REQUIREMENTS):
        return False
    return any(venv.glob(f"lib*/python*/site-packages/{_SDK_DIST_GLOB}"))


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = " | ".join((result.stdout + result.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"{what} failed (exit {result.returncode}): {tail}")


def _build(venv: Path) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(venv)], f"creating the SDK venv {venv}")
    python = str(_python(venv))
    _run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *SDK_REQUIREMENTS],
        f"pip install {' '.join(SDK_REQUIREMENTS)} into {venv}",
    )
    # Written last: a half-built environment never passes _is_ready.
    (venv / _MARKER).write_text("\n".join(SDK_REQUIREMENTS) + "\n")


def ensure_sdk_python(root: Path | None = None) -> Path:
    """The python executable of a venv holding ``a2a-sdk[http-server]==1.3.*``, uvicorn and httpx.

    ``root`` is the venv directory; by default ``$A2A_SDK_VENV``, else ``<repo>/.sdk-venv``.
    The venv is built on first use and reused while it holds the expected packages.
    Concurrent callers serialise on ``<root>.lock``, so one builds and the others wait.
    Raises ``RuntimeError`` with pip's last output lines if the build fails.
    """
    venv = Path(root) if root is not None else _default_location()
    venv = venv.absolute()
    if _is_ready(venv):
        return _python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_ready(venv):
            _build(venv)
    return _python(venv)
