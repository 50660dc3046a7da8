"""Random ids for messages and calls: 128 bits from the operating system's generator.

Ids travel in envelopes and name reply subjects; whoever could guess one could aim a
reply or a cancel at a call that is not theirs, or answer a request it never saw, so
they are unpredictable. (Cutting ids from blocks of random bytes measured no faster
than one system call per id: the Python around either costs the same.)
"""

from __future__ import annotations

import os

__all__ = ["new_id"]


def new_id() -> str:
    """A 32-character hex id: 128 random bits."""
    return os.urandom(16).hex()
