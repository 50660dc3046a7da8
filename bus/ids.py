"""Ids for messages and calls.

Ids that name a request (message and correlation ids) travel in envelopes and reply
subjects; whoever could guess one could aim a reply or a cancel at a call that is not
theirs, or answer a request it never saw, so they are 22 random characters of
``0-9a-zA-Z``, over 130 bits (:func:`new_id`): 10 bytes shorter than 128 bits in hex, for
each of the three a request carries, and none starts with ``-``, which a command line
would read as an option.
Ids nobody refers to by them (a reply's own message id) need only be unique and cost
less (:func:`serial_id`).

A call takes up to three random ids. One ``os.urandom(16)`` each is a system call each
(0.5 to 0.7 µs with its hex, measured here); :func:`new_id` cuts them from blocks of 256
instead (about 0.22 µs). A block is the system's random bytes like any other, only read
ahead, each byte below 248 taken as one character (``byte % 62``, uniform since 248 is
4 times 62) and the rest dropped, in one ``bytes.translate``. Which id of which block a
caller gets comes from one ``next()`` of a counter, a single step under the GIL, so
threads never share one; a forked child starts on blocks of its own.
"""

from __future__ import annotations

import itertools
import os
import string

__all__ = ["ID_LENGTH", "new_id", "serial_id"]

ID_LENGTH = 22
"""Characters of a :func:`new_id` (62**22 > 2**130)."""
_ALPHABET = (string.digits + string.ascii_lowercase + string.ascii_uppercase).encode()
_TABLE = bytes(_ALPHABET[b % 62] for b in range(256))
_DROPPED = bytes(range(248, 256))
_BLOCK_BITS = 8
"""A block holds 2**8 = 256 ids (about 5.7 KiB of random bytes)."""

_MASK = (1 << _BLOCK_BITS) - 1
_blocks: dict[int, str] = {}
_taken = itertools.count()


def new_id() -> str:
    """A 22-character id of ``0-9a-zA-Z``: over 130 random bits."""
    n = next(_taken)
    ids = _blocks.get(n >> _BLOCK_BITS)
    if ids is None:
        ids = _new_block(n >> _BLOCK_BITS)
    start = (n & _MASK) * ID_LENGTH
    return ids[start : start + ID_LENGTH]


def _random_characters(n: int) -> str:
    """``n`` uniformly random characters of ``0-9a-zA-Z``."""
    chars = b""
    while len(chars) < n:  # 1 byte in 32 is dropped: read a little more than needed
        chars += os.urandom(n - len(chars) + (n >> 4) + 8).translate(_TABLE, _DROPPED)
    return chars[:n].decode("ascii")


def _new_block(block: int) -> str:
    # The first id of a block reads it; so does, after a thread switch, an id whose block
    # was let go already (a fresh block then, as random: its other ids are never cut).
    ids = _blocks[block] = _random_characters(ID_LENGTH << _BLOCK_BITS)
    for old in [b for b in _blocks if b < block - 1]:
        _blocks.pop(old, None)
    return ids


_PREFIX_LENGTH = 11
"""A serial id's random prefix (65 bits), per process."""
_prefix = _random_characters(_PREFIX_LENGTH)
_counter = itertools.count(1)


def _reseed() -> None:
    global _prefix, _counter, _taken
    _prefix, _counter = _random_characters(_PREFIX_LENGTH), itertools.count(1)
    _blocks.clear()  # the parent's blocks: the parent cuts its next ids from them
    _taken = itertools.count()


os.register_at_fork(after_in_child=_reseed)


def serial_id() -> str:
    """A unique but guessable id (a random prefix per process and a counter)."""
    return f"{_prefix}{next(_counter):x}"
