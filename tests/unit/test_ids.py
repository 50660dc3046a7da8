"""Random ids are cut from blocks of random bytes: unique across threads and forks, 128 bits each."""

from __future__ import annotations

import os
import re
import threading

import pytest

from bus import ids
from bus.ids import new_id, serial_id

HEX32 = re.compile(r"[0-9a-f]{32}")


def test_ids_are_32_hex_characters_and_unique_across_many_blocks() -> None:
    many = [new_id() for _ in range(20_000)]  # about 80 blocks
    assert all(HEX32.fullmatch(i) for i in many)
    assert len(set(many)) == len(many)
    assert len(ids._blocks) <= 2  # blocks used up are let go


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
    childs = {child[i : i + 32] for i in range(0, 300 * 32, 32)}
    assert len(childs) == 300 and not parents & childs
    assert child[300 * 32 : 300 * 32 + 16] != serial_id()[:16]  # the serial ids' prefix too
