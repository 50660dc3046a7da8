"""Random ids are cut from blocks of random bytes: unique across threads and forks, over 130 bits each."""

from __future__ import annotations

import collections
import math
import os
import re
import threading

import pytest

from bus import ids
from bus.ids import ID_LENGTH, new_id, serial_id

ID = re.compile(r"[0-9a-zA-Z]{22}")


def test_ids_are_22_alphanumeric_characters_and_unique_across_many_blocks() -> None:
    many = [new_id() for _ in range(20_000)]  # about 80 blocks
    assert ID_LENGTH == 22 and 62**ID_LENGTH > 2**130
    assert all(ID.fullmatch(i) for i in many)
    assert len(set(many)) == len(many)
    assert len(ids._blocks) <= 2  # blocks used up are let go


def test_every_character_is_about_as_likely_in_every_place() -> None:
    # 62 characters a place; a character missing, or one drawn far more than the rest,
    # would cut the ids' bits (a byte taken as ``b % 62`` without dropping 248-255 makes
    # the first 8 characters 5/4 as likely as the rest).
    many = [new_id() for _ in range(40_000)]
    every = collections.Counter("".join(many))
    assert len(every) == 62
    expected = 40_000 * ID_LENGTH / 62
    worst = max(abs(n - expected) for n in every.values())
    assert worst < 6 * math.sqrt(expected)  # 6 standard deviations (a skewed table is 25% off)
    for place in (0, ID_LENGTH - 1):
        firsts = collections.Counter(i[place] for i in many)
        assert len(firsts) == 62
        assert max(firsts.values()) < 2 * 40_000 / 62


def test_serial_ids_are_unique_and_never_start_with_a_dash() -> None:
    serials = [serial_id() for _ in range(1_000)]
    assert len(set(serials)) == 1_000
    assert not any(s.startswith("-") for s in serials) and all(s.isalnum() for s in serials)


def test_threads_never_get_the_same_id() -> None:
    got: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def take(out: list[str]) -> None:
        start.wait()
        for _ in range(5_000):
            out.append(new_id())

    workers = [threading.Thread(target=take, args=(out,)) for out in got]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    every = [i for out in got for i in out]
    assert len(every) == 40_000 and len(set(every)) == 40_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_repeat_its_parents_next_ids() -> None:
    new_id()  # the parent holds a block part used
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, "".join([new_id() for _ in range(300)] + [serial_id()]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parents = {new_id() for _ in range(300)}
    size = ID_LENGTH
    childs = {child[i : i + size] for i in range(0, 300 * size, size)}
    assert len(childs) == 300 and not parents & childs
    assert child[300 * size : 300 * size + 11] != serial_id()[:11]  # the serial ids' prefix too
