"""The dev cluster file: where ``a2a up`` tells every other ``a2a`` command which servers it runs.

``export NAME=value`` lines (a shell may ``source`` it too), read by
:func:`a2a.core.settings.read_dev_cluster`, written when the servers accept connections and
removed when ``a2a up`` stops. One left behind by an ``a2a up`` that was killed names a
process that is gone, and readers ignore it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["remove_dev_cluster", "write_dev_cluster"]


def write_dev_cluster(path: Path, values: Mapping[str, str], pid: int | None = None) -> None:
    """Write ``values`` (NATS_URL, REDIS_URL, A2A_OPEN) for process ``pid`` (this one), atomically."""
    pid = os.getpid() if pid is None else pid
    lines = [
        f"# The dev cluster of `a2a up` (pid {pid}); removed when it stops. Every a2a command and",
        "# Settings.from_env() use these servers where the environment names no NATS server.",
        *(f"export {name}={value}" for name, value in values.items()),
        f"export A2A_DEV_PID={pid}",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{pid}")
    partial.write_text("\n".join(lines) + "\n")
    os.replace(partial, path)


def remove_dev_cluster(path: Path, pid: int | None = None) -> None:
    """Remove the file if process ``pid`` (this one) wrote it; another ``a2a up``'s stays."""
    pid = os.getpid() if pid is None else pid
    with contextlib.suppress(OSError):
        if f"export A2A_DEV_PID={pid}\n" in path.read_text():
            path.unlink()
