"""An agent's slots: a handler waiting for one and cancelled (a withdrawal, its deadline, a
shutdown) ends cancelled, even when a slot was released in the same turn."""

from __future__ import annotations

import asyncio

import pytest

from a2a.core.slots import Slots

pytestmark = pytest.mark.anyio


async def test_a_waiter_cancelled_as_a_slot_is_released_ends_cancelled_and_leaves_the_slot_free() -> None:
    slots = Slots(1)
    assert slots.try_acquire()
    waiter = asyncio.create_task(slots.acquire())
    await asyncio.sleep(0)  # waiting for the slot
    waiter.cancel()
    slots.release()  # the running handler ends in the same turn
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert slots.used == 0 and not slots.busy
    assert slots.try_acquire()  # free for the next call


async def test_a_slot_handed_to_a_waiter_cancelled_just_then_passes_to_the_next() -> None:
    slots = Slots(1)
    assert slots.try_acquire()
    first, second = asyncio.create_task(slots.acquire()), asyncio.create_task(slots.acquire())
    await asyncio.sleep(0)
    slots.release()  # handed to the first...
    first.cancel()  # ...cancelled before it could run
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)  # the slot went on to the second
    assert slots.used == 1
