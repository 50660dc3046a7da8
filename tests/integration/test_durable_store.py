"""One contract, two stores: the JetStream store on a real nats-server and the in-memory twin
behave alike (de-duplication, redelivery after the ack wait, TTLs, first-writer-wins keys)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import anyio
import nats
import pytest

from transports import NatsTransport
from transports.durable import DurableStore, MemoryDurable
from transports.jetstream_config import StoreConfig
from transports.jetstream_store import JetStreamDurable

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ACK_WAIT = 1.0


@pytest.fixture(params=["memory", "jetstream"])
async def store(request: pytest.FixtureRequest, nats_url: str) -> AsyncIterator[DurableStore]:
    if request.param == "memory":
        yield MemoryDurable(ack_wait=ACK_WAIT)
        return
    transport = await NatsTransport.connect(nats_url)
    name = uuid.uuid4().hex[:8]
    config = StoreConfig(stream=f"Q{name}", subjects=[f"q{name}.>"], bucket=f"KV{name}", ack_wait=ACK_WAIT)
    jetstream = JetStreamDurable(transport, config)
    await jetstream.open()
    yield jetstream
    await jetstream.aclose()
    await transport.aclose()


def subject(store: DurableStore, queue: str) -> str:
    if isinstance(store, JetStreamDurable):
        return store.config.subjects[0].replace(">", queue)
    return f"q.{queue}"


async def test_a_message_is_stored_once_and_delivered_again_until_acknowledged(store: DurableStore) -> None:
    on = subject(store, "work")
    assert await store.enqueue(on, "id-1", b"hello", ttl=60)
    assert not await store.enqueue(on, "id-1", b"hello")  # the same id: a duplicate
    (first,) = await store.take("worker", on, max_items=4, timeout=1)
    assert (first.data, first.attempt, first.subject) == (b"hello", 1, on)
    start = anyio.current_time()
    (again,) = await store.take("worker", on, max_items=4, timeout=ACK_WAIT + 2)
    assert again.attempt == 2 and anyio.current_time() - start >= ACK_WAIT * 0.8
    await again.ack()
    assert await store.take("worker", on, max_items=4, timeout=ACK_WAIT + 0.5) == []


async def test_an_idle_queue_gives_nothing_for_any_batch_size(store: DurableStore) -> None:
    for batch in (1, 4, 64):
        assert await store.take("worker", subject(store, "idle"), max_items=batch, timeout=0.2) == []


async def test_a_delivery_given_back_comes_again_at_once_and_working_keeps_it(store: DurableStore) -> None:
    on = subject(store, "back")
    await store.enqueue(on, "id-2", b"x")
    (first,) = await store.take("worker", on, max_items=1, timeout=1)
    await first.nak()
    (second,) = await store.take("worker", on, max_items=1, timeout=0.5)
    assert second.attempt == 2
    for _ in range(3):  # kept alive past the ack wait
        await anyio.sleep(ACK_WAIT / 2)
        await second.working()
    assert await store.take("worker", on, max_items=1, timeout=0.2) == []
    await second.term()


async def test_a_message_whose_ttl_passes_is_never_delivered(store: DurableStore) -> None:
    on = subject(store, "ttl")
    await store.enqueue(on, "id-3", b"late", ttl=1)
    await anyio.sleep(1.6)
    assert await store.take("worker", on, max_items=1, timeout=0.3) == []


async def test_keys_first_writer_wins_and_a_watch_hears_writes(store: DurableStore) -> None:
    assert await store.create("outcome.a", b"1")
    assert not await store.create("outcome.a", b"2")
    assert await store.get("outcome.a") == b"1"
    assert await store.get("outcome.missing") is None
    async with store.watch("outcome.b") as notice, anyio.create_task_group() as tg:

        async def write() -> None:
            await anyio.sleep(0.1)
            await store.put("outcome.b", b"v")

        tg.start_soon(write)
        with anyio.fail_after(2):
            await notice.wait()
    assert await store.get("outcome.b") == b"v"


async def test_a_pattern_watch_hears_its_keys_only_and_keys_are_listed(store: DurableStore) -> None:
    async with store.watch("event.a.s.t1.*", family="event.*.s.*.*") as notice:
        await store.put("event.a.s.t2.1", b"other task")
        await store.put("event.a.x.t1.1", b"other sender")
        with anyio.move_on_after(0.3) as idle:
            await notice.wait()
        assert idle.cancelled_caught
        await store.put("event.a.s.t1.1", b"mine")
        with anyio.fail_after(2):
            await notice.wait()
    await store.put("task.s.t1", b"r")
    await store.put("task.s.t2", b"r")
    await store.put("task.x.t3", b"r")
    assert sorted(await store.keys("task.s.*")) == ["task.s.t1", "task.s.t2"]
    assert await store.keys("nothing.>") == []


@pytest.fixture
async def republished(nats_url: str) -> AsyncIterator[JetStreamDurable]:
    """A JetStream store whose bucket republishes its stored writes (watchers trust them)."""
    transport = await NatsTransport.connect(nats_url)
    name = uuid.uuid4().hex[:8]
    config = StoreConfig(
        stream=f"Q{name}", subjects=[f"q{name}.>"], bucket=f"KV{name}", updates=f"u{name}", ack_wait=ACK_WAIT
    )
    jetstream = JetStreamDurable(transport, config)
    await jetstream.open()
    assert jetstream.trusted
    yield jetstream
    await jetstream.aclose()
    await transport.aclose()


async def test_many_listening_at_once_read_the_stream_once_and_hear_each_write_once(
    republished: JetStreamDurable, nats_url: str
) -> None:
    reads = 0

    async def counted(msg: object) -> None:
        nonlocal reads
        reads += 1

    spy = await nats.connect(nats_url)
    await spy.subscribe(f"$JS.API.STREAM.INFO.{republished.config.stream}", cb=counted)
    await spy.flush()
    async with anyio.create_task_group() as tg:
        for _ in range(32):
            tg.start_soon(republished.listen, "outcome.>")
    await spy.flush()
    await spy.close()
    assert reads == 1
    fired = 0

    def count() -> None:
        nonlocal fired
        fired += 1

    async with republished.watch("outcome.x", family="outcome.>") as notice:
        notice.on_fire = count
        await republished.put("outcome.x", b"1")
        with anyio.fail_after(2):
            await notice.wait()
        await anyio.sleep(0.2)  # a second subscription's copy would come now
    assert fired == 1


async def test_forgetting_values_heard_costs_coverage_once_per_half_of_them(
    republished: JetStreamDurable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("transports.jetstream_store.RECENT", 16)
    store, family = republished, "outcome.>"
    queue = store.config.subjects[0].replace(">", "work")

    async def settle(key: str) -> None:  # until the store has heard the write of ``key``
        with anyio.fail_after(2):
            while store.heard(key, family, 0)[1] is None:
                await anyio.sleep(0.01)

    await store.listen(family)
    first = await store.enqueue(queue, "t1", b"task")  # queued after the mark: covered
    assert store.heard("outcome.t1", family, first) == (True, None)
    for n in range(17):  # one more than it keeps: the older half is forgotten
        await store.put(f"outcome.k{n}", b"v")
    await settle("outcome.k16")
    assert store.heard("outcome.t1", family, first)[0] is False  # nothing vouched for now
    assert store.heard("outcome.k0", family, 0)[1] is None  # forgotten
    await store.listen(family)  # a new mark
    later = await store.enqueue(queue, "t2", b"task")
    for n in range(7):  # fewer than half: the mark holds
        await store.put(f"outcome.m{n}", b"v")
    await settle("outcome.m6")
    assert store.heard("outcome.t2", family, later) == (True, None)
    assert store.heard("outcome.m0", family, later) == (True, b"v")


async def test_a_deleted_key_can_be_created_again_once(store: DurableStore) -> None:
    assert await store.create("key.a", b"1")
    await store.delete("key.a")
    assert await store.get("key.a") is None
    assert await store.create("key.a", b"2")
    assert not await store.create("key.a", b"3")
    assert await store.get("key.a") == b"2"
    with pytest.raises(ValueError):
        await store.create("key..empty-token", b"x")
