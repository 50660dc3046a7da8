"""CPU seconds of a process: what each process of a benchmark spent in a window."""

from __future__ import annotations

import ctypes
import os
import sys
import time

__all__ = ["process_cpu"]


def process_cpu(pid: int | None) -> float:
    """Seconds of CPU (user and system) the process ``pid`` has used, its threads' (ended
    ones too); 0 when unknown (a server not started here, or gone).

    On Linux it is the process's CPU-time clock (``clock_getcpuclockid``), read to the
    nanosecond, so a window of a few thousand calls measures microseconds per call, not
    the 10 ms ticks of ``/proc/<pid>/stat`` (the fallback).
    """
    if pid is None:
        return 0.0
    if sys.platform.startswith("linux"):
        try:
            return time.clock_gettime(_cpu_clock(pid))
        except OSError:  # gone, or not ours to read: the ticks say what they can
            pass
    return _ticks(pid)


def _cpu_clock(pid: int) -> int:
    """Linux's id of the CPU-time clock of process ``pid`` (``MAKE_PROCESS_CPUCLOCK(pid,
    CPUCLOCK_SCHED)``, what ``clock_getcpuclockid`` returns), as a C ``clockid_t``."""
    return ctypes.c_int32((~pid << 3) | 2).value


def _ticks(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0
