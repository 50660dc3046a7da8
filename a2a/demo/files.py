"""Reading and writing the files callers name, inside the workspace of this agent process."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio

from a2a.errors import InvalidParams, PermissionDenied

from .workspace import confine, workspace_root

__all__ = ["PATH_PARAMS", "read_text", "root_of", "workspace_file", "write_text"]

PATH_PARAMS = {
    "type": "object",
    "required": ["path"],
    "properties": {"workspace": {"type": "string"}, "path": {"type": "string"}},
}
"""Parameters of an action on one file: its ``path`` (a ``workspace`` too, from older callers)."""


def root_of(params: dict[str, Any]) -> Path:
    """This agent's workspace; a caller's ``workspace`` parameter may only name the same one."""
    root = workspace_root()
    given = params.get("workspace")
    if given is not None and (
        not isinstance(given, str) or "\0" in given or os.path.realpath(given) != str(root)
    ):
        raise PermissionDenied("the workspace is set by the agent's configuration, not by callers")
    return root


def workspace_file(params: dict[str, Any]) -> anyio.Path:
    """The file ``params["path"]`` names inside this agent's workspace."""
    return anyio.Path(confine(root_of(params), params["path"]))


def _failed(verb: str, params: dict[str, Any], exc: OSError) -> InvalidParams:
    # Said without the workspace's absolute path, which the OS error message holds.
    return InvalidParams(f"cannot {verb} {params['path']!r}: {exc.strerror or type(exc).__name__}")


async def read_text(params: dict[str, Any]) -> str:
    """The text of the file ``params["path"]`` names."""
    file = workspace_file(params)
    try:
        return await file.read_text()
    except OSError as exc:
        raise _failed("read", params, exc) from None


async def write_text(params: dict[str, Any], text: str) -> None:
    """Replace the file ``params["path"]`` names with ``text``."""
    file = workspace_file(params)
    try:
        await file.write_text(text)
    except OSError as exc:
        raise _failed("write", params, exc) from None
