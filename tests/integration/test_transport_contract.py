"""One contract, two transports: the in-memory one must behave like a real nats-server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from transports import (
    MemoryBroker,
    MessageTooLarge,
    NatsTransport,
    Transport,
    TransportClosed,
    is_no_responders,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "nats"])
async def connect(request: pytest.FixtureRequest, nats_url: str) -> AsyncIterator[Any]:
    """A factory of connected transports of one kind; all closed afterwards."""
    opened: list[Transport] = []
    if request.param == "memory":
        async with MemoryBroker(max_payload=1024 * 1024) as broker:

            async def make_memory() -> Transport:
                t = broker.connect()
                opened.append(t)
                return t

            yield make_memory
            for t in opened:
                await t.aclose()
    else:

        async def make_nats() -> Transport:
            t = await NatsTransport.connect(nats_url)
            opened.append(t)
            return t

        yield make_nats
        for t in opened:
            await t.aclose()


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.event = anyio.Event()

    async def __call__(self, msg: Any) -> None:
        self.messages.append(msg)
        self.event.set()

    async def wait(self, n: int = 1, timeout: float = 2.0) -> list[Any]:
        with anyio.fail_after(timeout):
            while len(self.messages) < n:
                self.event = anyio.Event()
                await self.event.wait()
        return self.messages


async def test_publish_reaches_exact_and_wildcard_subscribers(connect: Any) -> None:
    a, b = await connect(), await connect()
    exact, star, tail, other = Inbox(), Inbox(), Inbox(), Inbox()
    await b.subscribe("c.x.y", exact)
    await b.subscribe("c.*.y", star)
    await b.subscribe("c.>", tail)
    await b.subscribe("c.z.y", other)
    await b.flush()
    await a.publish("c.x.y", b"hi", headers={"K": "v"})
    for inbox in (exact, star, tail):
        (msg,) = await inbox.wait()
        assert (msg.subject, msg.data, dict(msg.headers or {})) == ("c.x.y", b"hi", {"K": "v"})
    await anyio.sleep(0.05)
    assert other.messages == []


async def test_a_queue_group_delivers_each_message_to_exactly_one_member(connect: Any) -> None:
    pub = await connect()
    members = [Inbox() for _ in range(3)]
    for inbox in members:
        await (await connect()).subscribe("q.work", inbox, queue="workers")
    plain = Inbox()
    await (await connect()).subscribe("q.work", plain)
    await anyio.sleep(0.1)
    for i in range(30):
        await pub.publish("q.work", str(i).encode())
    await plain.wait(30)
    await anyio.sleep(0.1)
    got = sorted(int(m.data) for inbox in members for m in inbox.messages)
    assert got == list(range(30))


async def test_no_responders_status_comes_back_on_the_reply_subject(connect: Any) -> None:
    t = await connect()
    replies = Inbox()
    await t.subscribe("r.inbox", replies)
    await t.flush()
    await t.publish("nobody.listens", b"x", reply="r.inbox")
    (msg,) = await replies.wait()
    assert is_no_responders(msg)


async def test_oversized_messages_are_refused_on_the_sending_side(connect: Any) -> None:
    t = await connect()
    with pytest.raises(MessageTooLarge) as info:
        await t.publish("big", b"x" * (t.max_payload + 1))
    assert info.value.limit == t.max_payload


async def test_unsubscribe_stops_delivery_and_close_refuses_publish(connect: Any) -> None:
    a, b = await connect(), await connect()
    inbox = Inbox()
    sub = await b.subscribe("u.x", inbox)
    await b.flush()
    await a.publish("u.x", b"1")
    await inbox.wait(1)
    await sub.unsubscribe()
    await b.flush()
    await a.publish("u.x", b"2")
    await anyio.sleep(0.1)
    assert [m.data for m in inbox.messages] == [b"1"]
    await a.aclose()
    with pytest.raises(TransportClosed):
        await a.publish("u.x", b"3")


async def test_a_failing_handler_does_not_stop_its_subscription(connect: Any) -> None:
    a, b = await connect(), await connect()
    inbox = Inbox()

    async def flaky(msg: Any) -> None:
        if msg.data == b"boom":
            raise RuntimeError("handler bug")
        await inbox(msg)

    await b.subscribe("f.x", flaky)
    await b.flush()
    await a.publish("f.x", b"boom")
    await a.publish("f.x", b"fine")
    (msg,) = await inbox.wait()
    assert msg.data == b"fine"


async def test_a_taker_is_a_shortcut_every_message_is_handled_once(connect: Any) -> None:
    """A subscription's taker takes what it returns True for; the rest reaches the handler
    (a transport may skip the taker: then the handler gets everything). A taker that fails
    loses that message only, never the subscription."""
    a, b = await connect(), await connect()
    inbox, taken, offered = Inbox(), [], []

    def take(msg: Any) -> bool:
        offered.append(msg.data)
        if msg.data == b"boom":
            raise RuntimeError("taker bug")
        if msg.data.startswith(b"t"):
            taken.append(msg.data)
            return True
        return False

    sub = await b.subscribe("k.x", inbox, take=take)
    await b.flush()
    sent = [b"t1", b"h1", b"t2", b"h2", b"t3", b"h3"]
    await a.publish("k.x", b"boom", headers={"A": "1"})
    for data in sent:
        await a.publish("k.x", data, headers={"A": "1"} if data == b"t2" else None)
    await a.flush()
    with anyio.fail_after(3):
        while len(taken) + len(inbox.messages) < len(sent):
            await anyio.sleep(0.01)
    await anyio.sleep(0.1)
    handled = [m.data for m in inbox.messages]
    assert sorted(taken + [d for d in handled if d != b"boom"]) == sorted(sent)
    if isinstance(b, NatsTransport) and offered:  # the NATS transport offers every message first
        assert taken == [b"t1", b"t2", b"t3"] and handled == [b"h1", b"h2", b"h3"]
        assert b.take_failures == 1
    await sub.unsubscribe()
    await b.flush()
    offered.clear()
    await a.publish("k.x", b"t4")
    await anyio.sleep(0.1)
    assert offered == [] and b"t4" not in [m.data for m in inbox.messages]
