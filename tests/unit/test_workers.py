"""bus.Workers and TaskSet.start_now: reusable handler tasks that keep a task's guarantees."""

from __future__ import annotations

import asyncio
import contextvars
import sys

import pytest

from bus.tasks import BURST, TaskSet, Workers

pytestmark = pytest.mark.anyio

var: contextvars.ContextVar[str] = contextvars.ContextVar("var")


def stack_depth() -> int:
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


async def settle(workers: Workers[object], timeout: float = 2.0) -> None:
    """Wait until every submitted item was taken and the loop had time to finish them."""
    async with asyncio.timeout(timeout):
        while len(workers):
            await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)


async def test_items_are_handled_in_order_on_one_task_when_nothing_waits() -> None:
    seen: list[tuple[int, asyncio.Task[object] | None]] = []

    async def handle(item: int) -> None:
        seen.append((item, asyncio.current_task()))

    tasks = TaskSet()
    workers: Workers[int] = Workers(handle, tasks)
    for i in range(3 * BURST):
        workers.submit(i)
    await settle(workers)  # type: ignore[arg-type]
    assert [item for item, _ in seen] == list(range(3 * BURST))
    assert len({task for _, task in seen}) == 1
    await tasks.aclose()


async def test_an_item_behind_a_waiting_handling_is_not_held_up() -> None:
    # The first handling waits for something only the second one does: with the second
    # stuck behind the first, neither would ever finish.
    second_ran = asyncio.Event()
    finished: list[int] = []

    async def handle(item: int) -> None:
        if item == 0:
            await second_ran.wait()
        else:
            second_ran.set()
        finished.append(item)

    tasks = TaskSet()
    workers: Workers[int] = Workers(handle, tasks)
    workers.submit(0)
    workers.submit(1)
    async with asyncio.timeout(1):
        while len(finished) < 2:
            await asyncio.sleep(0.001)
    assert finished == [1, 0]

    # And when the waiting one arrives first and the other later, while it waits.
    second_ran.clear()
    finished.clear()
    workers.submit(0)
    await asyncio.sleep(0.01)
    workers.submit(1)
    async with asyncio.timeout(1):
        while len(finished) < 2:
            await asyncio.sleep(0.001)
    assert finished == [1, 0]
    await tasks.aclose()


async def test_each_handling_starts_with_an_empty_context() -> None:
    seen: list[tuple[int, str | None, asyncio.Task[object] | None]] = []

    async def handle(item: int) -> None:
        seen.append((item, var.get(None), asyncio.current_task()))
        if item == 1:
            var.set("left behind")  # never reset: the next item must not see it
        if item == 3:
            token = var.set("cleaned up")
            var.reset(token)

    tasks = TaskSet()
    workers: Workers[int] = Workers(handle, tasks)
    for i in range(6):
        workers.submit(i)
    await settle(workers)  # type: ignore[arg-type]
    assert [value for _, value, _ in seen] == [None] * 6
    task_of = {item: task for item, _, task in seen}
    assert task_of[0] is task_of[1]  # reused while nothing was left behind
    assert task_of[2] is not task_of[1]  # item 1 left a variable set: a fresh worker
    assert task_of[3] is task_of[4] is task_of[5]  # set and reset leaves nothing behind
    await tasks.aclose()


async def test_a_cancelled_handling_leaves_nothing_to_the_next() -> None:
    waiting: list[asyncio.Task[object]] = []
    outcomes: list[str] = []

    async def handle(item: str) -> None:
        task = asyncio.current_task()
        assert task is not None
        if item in ("uncancel", "swallow"):
            waiting.append(task)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                if item == "uncancel":
                    task.uncancel()  # handled, as the host does for calls it stops
                outcomes.append(item)  # "swallow" leaves the request pending on the task
            return
        outcomes.append(f"next starts with {task.cancelling()} pending")
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            outcomes.append("next timed out")

    tasks = TaskSet()
    workers: Workers[str] = Workers(handle, tasks)
    for first in ("uncancel", "swallow"):
        waiting.clear()
        outcomes.clear()
        workers.submit(first)
        async with asyncio.timeout(1):
            while not waiting:
                await asyncio.sleep(0.001)
        waiting[0].cancel()
        async with asyncio.timeout(1):
            while not outcomes:
                await asyncio.sleep(0.001)
        workers.submit("next")  # the worker that handled the first item is free again
        async with asyncio.timeout(2):
            while len(outcomes) < 3:
                await asyncio.sleep(0.001)
        assert outcomes == [first, "next starts with 0 pending", "next timed out"]
    await tasks.aclose()


async def test_a_burst_hands_the_event_loop_back() -> None:
    handled = 0
    seen_by_the_loop: list[int] = []

    async def handle(item: int) -> None:
        nonlocal handled
        handled += 1

    tasks = TaskSet()
    workers: Workers[int] = Workers(handle, tasks)
    for i in range(4 * BURST):
        workers.submit(i)
    asyncio.get_running_loop().call_soon(lambda: seen_by_the_loop.append(handled))
    await settle(workers)  # type: ignore[arg-type]
    assert handled == 4 * BURST
    assert 0 < seen_by_the_loop[0] < 4 * BURST  # the loop ran between items of the burst
    await tasks.aclose()


async def test_closing_cancels_workers_and_later_items_never_run() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()
    ran: list[int] = []

    async def handle(item: int) -> None:
        ran.append(item)
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    tasks = TaskSet()
    workers: Workers[int] = Workers(handle, tasks)
    workers.submit(1)
    await started.wait()
    await tasks.aclose(timeout=1)
    assert cancelled.is_set()
    workers.submit(2)
    await asyncio.sleep(0.01)
    assert ran == [1]


async def test_a_run_of_handlings_that_each_leave_state_behind_handles_every_item() -> None:
    # Every worker ends after one item; each successor starts on a fresh stack (on 3.12,
    # where tasks start eagerly, starting it from the ending one would grow the stack).
    seen: set[asyncio.Task[object] | None] = set()
    depths: list[int] = []
    handled = 0

    async def handle(item: int) -> None:
        nonlocal handled
        handled += 1
        if item >= 0:
            seen.add(asyncio.current_task())
            depths.append(stack_depth())
            var.set(f"left behind by {item}")

    tasks = TaskSet()
    workers: Workers[int] = Workers(handle, tasks)
    workers.submit(-1)  # leaves a worker waiting: the next submit wakes it, the rest queue up
    await settle(workers)  # type: ignore[arg-type]
    for i in range(2000):
        workers.submit(i)
    async with asyncio.timeout(10):
        while handled < 2001:
            await asyncio.sleep(0)
    assert len(seen) == 2000  # no handling ran after another's state
    assert max(depths) - min(depths) < 10  # each worker started on a fresh stack
    workers.submit(2000)  # and the next item still finds a worker
    async with asyncio.timeout(1):
        while handled < 2002:
            await asyncio.sleep(0)
    await tasks.aclose()
