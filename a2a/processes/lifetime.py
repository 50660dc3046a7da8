"""A child process that dies with its parent, however the parent ends.

Pass :func:`die_with_parent` as ``preexec_fn`` when starting a child: between fork and
exec it asks the kernel (Linux ``PR_SET_PDEATHSIG``) to SIGKILL the child when the thread
that started it ends, a SIGKILLed parent included. Start such children from a thread that
lives as long as they should (the main thread): the signal follows the thread, not the
process. Elsewhere than on Linux it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal

__all__ = ["PR_SET_PDEATHSIG", "die_with_parent"]

PR_SET_PDEATHSIG = 1
"""``prctl(2)`` option: the signal this process gets when its parent thread ends."""


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Have the kernel SIGKILL this process when its parent ends (Linux; elsewhere a no-op)."""
    with contextlib.suppress(OSError, AttributeError):  # no C library to load, no prctl off Linux
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
