"""Separate virtual environments with public A2A client libraries, for interoperability tests.

The ``a2a-sdk`` installs a top-level ``a2a`` package of its own, which clashes with this
project's, so it never shares an environment with it: tests run SDK programs with the
interpreter returned by :func:`ensure_sdk_python`, and Google ADK programs (ADK's A2A
support is built on the same SDK) with the one :func:`ensure_adk_python` returns.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ADK_REQUIREMENTS", "SDK_REQUIREMENTS", "ensure_adk_python", "ensure_sdk_python"]

SDK_REQUIREMENTS = ("a2a-sdk[http-server]==1.3.*", "uvicorn", "httpx")
"""What the SDK environment holds; changing it rebuilds existing environments."""

ADK_REQUIREMENTS = ("google-adk[a2a]==2.13.*",)
"""What the ADK environment holds (its ``a2a`` extra brings ``a2a-sdk``)."""


@dataclass(frozen=True)
class _Env:
    requirements: tuple[str, ...]
    marker: str
    dist_glob: str
    variable: str
    directory: str

    def location(self) -> Path:
        configured = os.environ.get(self.variable)
        if configured:
            return Path(configured)
        repo = Path(__file__).resolve().parents[2]
        return (repo if (repo / "pyproject.toml").is_file() else Path.cwd()) / self.directory


_SDK = _Env(
    SDK_REQUIREMENTS, "a2a-sdk-requirements.txt", "a2a_sdk-1.3.*.dist-info", "A2A_SDK_VENV", ".sdk-venv"
)
_ADK = _Env(
    ADK_REQUIREMENTS,
    "google-adk-requirements.txt",
    "google_adk-2.13.*.dist-info",
    "A2A_ADK_VENV",
    ".adk-venv",
)


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _is_ready(venv: Path, env: _Env) -> bool:
    marker = venv / env.marker
    if not _python(venv).is_file() or not marker.is_file():
        return False
    if marker.read_text().splitlines() != list(env.requirements):
        return False
    return any(venv.glob(f"lib*/python*/site-packages/{env.dist_glob}"))


def _run(argv: list[str], what: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = " | ".join((result.stdout + result.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"{what} failed (exit {result.returncode}): {tail}")


def _build(venv: Path, env: _Env) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(venv)], f"creating the venv {venv}")
    python = str(_python(venv))
    _run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *env.requirements],
        f"pip install {' '.join(env.requirements)} into {venv}",
    )
    # Written last: a half-built environment never passes _is_ready.
    (venv / env.marker).write_text("\n".join(env.requirements) + "\n")


def _ensure(root: Path | None, env: _Env) -> Path:
    venv = (Path(root) if root is not None else env.location()).absolute()
    if _is_ready(venv, env):
        return _python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_ready(venv, env):
            _build(venv, env)
    return _python(venv)


def ensure_sdk_python(root: Path | None = None) -> Path:
    """The python executable of a venv holding ``a2a-sdk[http-server]==1.3.*``, uvicorn and httpx.

    ``root`` is the venv directory; by default ``$A2A_SDK_VENV``, else ``<repo>/.sdk-venv``.
    The venv is built on first use and reused while it holds the expected packages.
    Concurrent callers serialise on ``<root>.lock``, so one builds and the others wait.
    Raises ``RuntimeError`` with pip's last output lines if the build fails.
    """
    return _ensure(root, _SDK)


def ensure_adk_python(root: Path | None = None) -> Path:
    """The python executable of a venv holding ``google-adk[a2a]==2.13.*``.

    ``root`` is the venv directory; by default ``$A2A_ADK_VENV``, else ``<repo>/.adk-venv``.
    Built, reused and locked as :func:`ensure_sdk_python` does; raises ``RuntimeError``
    with pip's last output lines if the build fails.
    """
    return _ensure(root, _ADK)
