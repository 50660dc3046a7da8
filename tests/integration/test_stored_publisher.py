"""Stored publishes with their acks on one inbox subscription (``StoredPublisher``), against a
real nats-server with JetStream: acks, duplicates, refusals, no stream, no answer in time,
answers that are no ack, and nothing left waiting after many at once or a cancel."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import anyio
import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import StreamConfig

from transports.errors import TransportError
from transports.jetstream_publish import LAST_SUBJECT_SEQ, WRONG_LAST, Refused, StoredPublisher

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[Client]:
    client = await nats.connect(nats_url)
    yield client
    await client.close()


@pytest.fixture
async def stream(nc: Client) -> AsyncIterator[str]:
    name = f"SP{uuid.uuid4().hex[:8]}"
    await nc.jetstream().add_stream(StreamConfig(name=name, subjects=[f"{name}.>"]))
    yield name
    await nc.jetstream().delete_stream(name)


@pytest.fixture
async def publisher(nc: Client) -> AsyncIterator[StoredPublisher]:
    stored = StoredPublisher(nc, timeout=0.5)
    await stored.start()
    yield stored
    await stored.stop()


async def test_acks_duplicates_and_refusals(publisher: StoredPublisher, stream: str) -> None:
    first = await publisher.publish(f"{stream}.a", b"1", {"Nats-Msg-Id": "one"})
    again = await publisher.publish(f"{stream}.a", b"1", {"Nats-Msg-Id": "one"})
    assert (first.seq, first.duplicate) == (1, False) and again.duplicate
    assert (await publisher.publish(f"{stream}.b", b"2", {LAST_SUBJECT_SEQ: "0"})).seq == 2
    with pytest.raises(Refused) as refused:
        await publisher.publish(f"{stream}.b", b"3", {LAST_SUBJECT_SEQ: "0"})  # b is at 2 already
    assert refused.value.err_code in WRONG_LAST


async def test_many_at_once_each_get_their_own_ack(publisher: StoredPublisher, stream: str) -> None:
    seqs: list[int] = []

    async def one(i: int) -> None:
        seqs.append((await publisher.publish(f"{stream}.m", str(i).encode(), {})).seq)

    async with anyio.create_task_group() as tg:
        for i in range(500):
            tg.start_soon(one, i)
    assert sorted(seqs) == list(range(1, 501))
    assert not publisher._waiting


async def test_no_stream_no_answer_and_answers_that_are_no_ack(
    nc: Client, publisher: StoredPublisher
) -> None:
    with pytest.raises(TransportError, match="no stream"):
        await publisher.publish(f"nobody.{uuid.uuid4().hex}", b"x", {})

    async def silent(msg: Msg) -> None:
        pass

    async def garbage(msg: Msg) -> None:
        await msg.respond(b"not json")

    async def stored_message(msg: Msg) -> None:  # as a direct get aimed at this inbox would answer
        await nc.publish(msg.reply, b'{"seq": 7}', headers={"Nats-Stream": "KV_x", "Nats-Sequence": "7"})

    base = f"fake.{uuid.uuid4().hex}"
    for name, cb in (("silent", silent), ("garbage", garbage), ("stored", stored_message)):
        await nc.subscribe(f"{base}.{name}", cb=cb)
    with anyio.fail_after(3):
        with pytest.raises(TransportError, match="in time"):
            await publisher.publish(f"{base}.silent", b"x", {})
    with pytest.raises(TransportError, match="not an ack"):
        await publisher.publish(f"{base}.garbage", b"x", {})
    with pytest.raises(TransportError, match="stored message"):
        await publisher.publish(f"{base}.stored", b"x", {})
    assert not publisher._waiting


async def test_a_cancelled_publish_leaves_nothing_waiting(nc: Client, publisher: StoredPublisher) -> None:
    subject = f"slow.{uuid.uuid4().hex}"

    async def never(msg: Msg) -> None:
        pass

    await nc.subscribe(subject, cb=never)
    with anyio.move_on_after(0.1):
        await publisher.publish(subject, b"x", {})
    assert not publisher._waiting


async def test_not_open_or_closed_it_fails_with_a_typed_error_at_once(nc: Client, stream: str) -> None:
    stored = StoredPublisher(nc, timeout=5)
    with pytest.raises(TransportError, match="not open"):
        await stored.publish(f"{stream}.a", b"x", {})
    await stored.start()
    subject = f"slow.{uuid.uuid4().hex}"

    async def never(msg: Msg) -> None:
        pass

    await nc.subscribe(subject, cb=never)
    failed: list[BaseException] = []

    async def waiting() -> None:
        try:
            await stored.publish(subject, b"x", {})
        except TransportError as exc:
            failed.append(exc)

    with anyio.fail_after(2):  # well before the 5 s the ack could take
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiting)
            await anyio.sleep(0.1)
            await stored.stop()
    assert len(failed) == 1 and "closed" in str(failed[0])
