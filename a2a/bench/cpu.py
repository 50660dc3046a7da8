"""CPU seconds of a process, from ``/proc``: what each process of a benchmark spent in a window."""

from __future__ import annotations

import os

__all__ = ["process_cpu"]


def process_cpu(pid: int | None) -> float:
    """Seconds of CPU (user and system) the process ``pid`` has used; 0 when unknown (a
    server not started here, or no ``/proc``)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0
