"""Ids for messages and calls.

Ids that name a request (message and correlation ids) travel in envelopes and reply
subjects; whoever could guess one could aim a reply or a cancel at a call that is not
theirs, or answer a request it never saw, so they are 128 random bits (:func:`new_id`).
Ids nobody refers to by them (a reply's own message id) need only be unique and cost
less (:func:`serial_id`). Cutting random ids from blocks of random bytes measured no
faster than one system call per id: the Python around either costs the same.
"""

from __future__ import annotations

import itertools
import os

__all__ = ["new_id", "serial_id"]


def new_id() -> str:
    """A 32-character hex id: 128 random bits."""
    return os.urandom(16).hex()


_prefix = os.urandom(8).hex()
_counter = itertools.count(1)


def _reseed() -> None:
    global _prefix, _counter
    _prefix, _counter = os.urandom(8).hex(), itertools.count(1)


os.register_at_fork(after_in_child=_reseed)


def serial_id() -> str:
    """A unique but guessable id (a random prefix per process and a counter)."""
    return f"{_prefix}{next(_counter):x}"
