"""Ids for messages and calls.

Ids that name a request (message and correlation ids) travel in envelopes and reply
subjects; whoever could guess one could aim a reply or a cancel at a call that is not
theirs, or answer a request it never saw, so they are 128 random bits (:func:`new_id`).
Ids nobody refers to by them (a reply's own message id) need only be unique and cost
less (:func:`serial_id`).

A call takes up to three random ids. One ``os.urandom(16)`` each is a system call each
(0.5 to 0.7 µs with its hex, measured here); :func:`new_id` cuts them from blocks of 256
instead (about 0.26 µs). A block is the system's random bytes like any other, only read
ahead. Which id of which block a caller gets comes from one ``next()`` of a counter, a
single step under the GIL, so threads never share one; a forked child starts on blocks
of its own.
"""

from __future__ import annotations

import itertools
import os

__all__ = ["new_id", "serial_id"]

_BLOCK_BITS = 8
"""A block holds 2**8 = 256 ids (4 KiB of random bytes, 8 KiB of hex)."""

_MASK = (1 << _BLOCK_BITS) - 1
_blocks: dict[int, str] = {}
_taken = itertools.count()


def new_id() -> str:
    """A 32-character hex id: 128 random bits."""
    n = next(_taken)
    ids = _blocks.get(n >> _BLOCK_BITS)
    if ids is None:
        ids = _new_block(n >> _BLOCK_BITS)
    start = (n & _MASK) << 5  # 32 hex characters an id
    return ids[start : start + 32]


def _new_block(block: int) -> str:
    # The first id of a block reads it; so does, after a thread switch, an id whose block
    # was let go already (a fresh block then, as random: its other ids are never cut).
    ids = _blocks[block] = os.urandom(16 << _BLOCK_BITS).hex()
    for old in [b for b in _blocks if b < block - 1]:
        _blocks.pop(old, None)
    return ids


_prefix = os.urandom(8).hex()
_counter = itertools.count(1)


def _reseed() -> None:
    global _prefix, _counter, _taken
    _prefix, _counter = os.urandom(8).hex(), itertools.count(1)
    _blocks.clear()  # the parent's blocks: the parent cuts its next ids from them
    _taken = itertools.count()


os.register_at_fork(after_in_child=_reseed)


def serial_id() -> str:
    """A unique but guessable id (a random prefix per process and a counter)."""
    return f"{_prefix}{next(_counter):x}"
