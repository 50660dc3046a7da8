"""Durable tasks on a store whose writes can be applied and still reported failed, as a
JetStream request is when its reply is lost, or when it times out while the connection is
away and is sent once it is back. A retry with the same key finishes the same task, and an
attempt the store failed is run again: nothing is refused forever, run twice, or ended by
the store's hiccup. And two attempts of one task running at once, even with one number,
never both run an effect."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import Agent, Context
from a2a.errors import Unavailable
from a2a.testing import TestBroker
from transports import TransportError
from transports.durable import Delivery, MemoryDurable

pytestmark = pytest.mark.anyio


class LostReplies(MemoryDurable):
    """Fails the n-th write whose description starts with an armed prefix: after applying
    it (``applied``), or instead of it."""

    def __init__(self) -> None:
        super().__init__(ack_wait=0.5)
        self.armed: dict[str, tuple[int, bool]] = {}

    def arm(self, prefix: str, nth: int = 1, *, applied: bool = True) -> None:
        self.armed[prefix] = (nth, applied)

    def _trips(self, what: str) -> bool | None:
        """None: go on; True: apply then fail; False: fail without applying."""
        for prefix, (nth, applied) in list(self.armed.items()):
            if what.startswith(prefix):
                if nth > 1:
                    self.armed[prefix] = (nth - 1, applied)
                    return None
                del self.armed[prefix]
                return applied
        return None

    async def create(self, key: str, value: bytes) -> bool:
        trip = self._trips(f"create {key}")
        done = await super().create(key, value) if trip is not False else False
        if trip is not None:
            raise TransportError(f"JetStream failed writing {key}: nats: timeout")
        return done

    async def put(self, key: str, value: bytes) -> None:
        trip = self._trips(f"put {key}")
        if trip is not False:
            await super().put(key, value)
        if trip is not None:
            raise TransportError(f"JetStream failed writing {key}: nats: timeout")

    async def enqueue(self, subject: str, msg_id: str, data: bytes, *, ttl: float | None = None) -> bool:
        trip = self._trips("enqueue")
        done = await super().enqueue(subject, msg_id, data, ttl=ttl) if trip is not False else False
        if trip is not None:
            raise TransportError("JetStream failed storing a task: nats: timeout")
        return done


def payer(charges: list[tuple[str | None, int]]) -> Agent:
    agent = Agent("payer")

    @agent.action("pay")
    async def pay(ctx: Context, params: dict[str, Any]) -> Any:
        await ctx.task.checkpoint("started")

        async def charge() -> str:
            charges.append((ctx.task.task_id, ctx.task.number))
            return "receipt"

        return await ctx.task.effect("charge", charge)

    return agent


async def submit_twice(rt: Any, key: str) -> Any:
    """The first try fails (the store reported a failure); the retry with the key is accepted."""
    with pytest.raises(Unavailable):
        await rt.tasks.submit("payer", "pay", {}, key=key, timeout=20)
    return await rt.tasks.submit("payer", "pay", {}, key=key, timeout=20)


@pytest.mark.parametrize(
    ("write", "applied"),
    [
        ("create key.", True),  # the key is kept, the submitter is told it failed
        ("create task.", True),  # the record
        ("enqueue", True),  # the queued request
        ("enqueue", False),  # the queued request, really lost
    ],
)
async def test_a_retry_with_the_key_finishes_the_one_task_whatever_the_failed_try_left(
    write: str, applied: bool
) -> None:
    charges: list[tuple[str | None, int]] = []
    store = LostReplies()
    async with TestBroker() as broker, broker.runtime(payer(charges), durable=store) as rt:
        store.arm(write, applied=applied)
        task = await submit_twice(rt, "order-1")
        with anyio.fail_after(10):
            assert await task.result() == "receipt"
        again = await rt.tasks.submit("payer", "pay", {}, key="order-1", timeout=20)
        await anyio.sleep(1.5)  # anything queued twice would run by now
    assert again.id == task.id and not again.created
    assert charges == [(task.id, 1)]


@pytest.mark.parametrize(
    ("write", "nth", "applied", "attempts"),
    [
        ("put checkpoint.", 1, False, 2),  # the checkpoint refused: run again
        ("put effect.", 1, False, 2),  # the effect's start refused: not run, run again
        ("put effect.", 2, True, 2),  # its end written, reported failed: reused
    ],
)
async def test_an_attempt_the_store_failed_is_run_again_not_ended_unavailable(
    write: str, nth: int, applied: bool, attempts: int
) -> None:
    charges: list[tuple[str | None, int]] = []
    store = LostReplies()
    async with TestBroker() as broker, broker.runtime(payer(charges), durable=store) as rt:
        store.arm(write, nth, applied=applied)
        task = await rt.tasks.submit("payer", "pay", {}, timeout=20)
        with anyio.fail_after(10):
            assert await task.result() == "receipt"
        outcome = await task.outcome()
    assert outcome.attempt == attempts
    assert len(charges) == 1


async def test_an_effects_end_refused_after_it_ran_is_in_doubt_not_unavailable() -> None:
    charges: list[tuple[str | None, int]] = []
    store = LostReplies()
    async with TestBroker() as broker, broker.runtime(payer(charges), durable=store) as rt:
        store.arm("put effect.", 2, applied=False)  # it ran; its end is never recorded
        task = await rt.tasks.submit("payer", "pay", {}, timeout=20)
        with anyio.fail_after(10):
            outcome = await task.outcome()
    assert outcome.state == "failed" and outcome.error is not None
    assert outcome.error.code == "EFFECT_IN_DOUBT"
    assert len(charges) == 1


class SlowReads(MemoryDurable):
    """Each read's answer arrives 10 ms after the store read the key, as over a network;
    its first deliveries claim an ack wait of 30 s, so their keep-alive is late for the 0.3 s
    the queue waits before it delivers them again."""

    async def get(self, key: str) -> bytes | None:
        value = await super().get(key)
        await anyio.sleep(0.01)
        return value

    async def take(self, consumer: str, subject: str, *, max_items: int, timeout: float) -> list[Delivery]:
        taken = await super().take(consumer, subject, max_items=max_items, timeout=timeout)
        for delivery in taken:
            if delivery.attempt == 1:
                delivery.ack_wait = 30.0
        return taken


async def test_two_attempts_running_at_once_never_both_run_an_effect() -> None:
    """The queue delivers the task again while its first attempt still runs (its keep-alive,
    every 10 s for the 30 s ack wait its delivery claims, is late for the queue's 0.3 s): the two
    attempts enter the effect at the same moment, and one of them runs it."""
    charges: list[int] = []
    started: list[int] = []
    both = anyio.Event()
    agent = Agent("payer")

    @agent.action("pay")
    async def pay(ctx: Context, params: dict[str, Any]) -> Any:
        started.append(ctx.task.number)
        if len(started) == 2:
            both.set()
        await both.wait()

        async def charge() -> str:
            charges.append(ctx.task.number)
            await anyio.sleep(0.1)
            return "receipt"

        return await ctx.task.effect("charge", charge)

    async with TestBroker() as broker, broker.runtime(agent, durable=SlowReads(ack_wait=0.3)) as rt:
        task = await rt.tasks.submit("payer", "pay", {}, timeout=20)
        with anyio.fail_after(10):
            outcome = await task.outcome()
        await anyio.sleep(0.3)  # the other attempt ends too
    assert started == [1, 2]
    assert len(charges) == 1
    ended = outcome.error.code if outcome.error is not None else outcome.state
    assert ended in ("completed", "EFFECT_IN_DOUBT")


class Renumbered(Delivery):
    """A delivery that says it is the first, whatever the queue counted."""

    def __init__(self, inner: Delivery) -> None:
        self.inner, self.subject, self.data, self.attempt = inner, inner.subject, inner.data, 1
        self.ack_wait = 30.0  # its keep-alive comes late: the queue delivers it again meanwhile
        self.sequence = inner.sequence

    async def ack(self) -> None:
        await self.inner.ack()

    async def nak(self, delay: float = 0.0) -> None:
        await self.inner.nak(delay)

    async def working(self) -> None:
        await self.inner.working()

    async def term(self) -> None:
        await self.inner.term()


class ForgetfulQueue(MemoryDurable):
    """Delivers everything again as delivery 1, as nats-server does with the deliveries it
    made after it last wrote its consumer's state, when it is SIGKILLed and restarted."""

    async def take(self, consumer: str, subject: str, *, max_items: int, timeout: float) -> list[Delivery]:
        taken = await super().take(consumer, subject, max_items=max_items, timeout=timeout)
        return [Renumbered(delivery) for delivery in taken]


async def test_a_task_delivered_again_as_attempt_1_never_runs_an_effect_again() -> None:
    charges: list[int] = []
    agent = Agent("payer")

    @agent.action("pay")
    async def pay(ctx: Context, params: dict[str, Any]) -> Any:
        async def charge() -> str:
            charges.append(ctx.task.number)
            await anyio.sleep(0.5)  # delivered again meanwhile, as attempt 1
            return "receipt"

        return await ctx.task.effect("charge", charge)

    async with TestBroker() as broker, broker.runtime(agent, durable=ForgetfulQueue(ack_wait=0.2)) as rt:
        task = await rt.tasks.submit("payer", "pay", {}, timeout=20)
        with anyio.fail_after(10):
            outcome = await task.outcome()
        await anyio.sleep(0.8)  # the first attempt ends too
    assert charges == [1]
    ended = outcome.error.code if outcome.error is not None else outcome.state
    assert ended in ("completed", "EFFECT_IN_DOUBT")
