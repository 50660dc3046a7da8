"""Unique ids for messages and correlation, cheaper than uuid4 on the hot path.

A random 64-bit prefix per process (renewed after fork) plus a counter.
"""

from __future__ import annotations

import itertools
import os

__all__ = ["new_id"]

_prefix = os.urandom(8).hex()
_counter = itertools.count(1)


def _reseed() -> None:
    global _prefix, _counter
    _prefix = os.urandom(8).hex()
    _counter = itertools.count(1)


os.register_at_fork(after_in_child=_reseed)


def new_id() -> str:
    """A 17+ character hex id, unique across processes with overwhelming probability."""
    return f"{_prefix}{next(_counter):x}"
