"""10,000 malformed messages of every kind at a live agent while honest calls go on.

Requests (random bytes, truncated, deeply nested, invalid UTF-8, wrong types, hostile
limits), probes, cancels, replies, acknowledgements and reply batches aimed at a
caller, notifications. Afterwards every request that carried a reply subject got a
typed reply, the agent's admission slots are all free, and every honest call succeeded.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import anyio
import nats
import pytest

from a2a import Runtime, Settings
from bus.protocol import ACK_HEADER, CANCEL_HEADER, PROBE_HEADER, REPLIES_HEADER
from tests.agents import echo

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MESSAGES = 10_000
HONEST = 300


def valid_request(rng: random.Random) -> dict[str, Any]:
    return {
        "type": "request",
        "messageId": f"m{rng.random()}",
        "sourceAgentId": "fuzz",
        "targetAgentId": "echo",
        "conversationId": "c",
        "protocolVersion": "1.2",
        "payload": {"action": "echo", "parameters": {"x": 1}},
        "metadata": {"timestamp": 1, "correlationId": f"c{rng.random()}", "ttlMs": 2000},
    }


def hostile_request(rng: random.Random) -> bytes:
    """One malformed or hostile request body."""
    good = valid_request(rng)
    kind = rng.randrange(12)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 300))
    if kind == 1:
        data = json.dumps(good).encode()
        return data[: rng.randrange(len(data))]
    if kind == 2:
        depth = rng.choice([100, 1000, 5000])
        return json.dumps(good).encode().replace(b'{"x": 1}', b'{"x": ' + b"[" * depth + b"]" * depth + b"}")
    if kind == 3:
        return json.dumps(good).encode().replace(b'"c"', b'"\xff\xfe\xc3"')
    if kind == 4:
        good["metadata"]["ttlMs"] = rng.choice([2**63, -1, "soon", 1.5, None])
        return json.dumps(good).encode()
    if kind == 5:
        good["metadata"].update(depth=rng.choice([0, 3, 10**9]), callChain=["x"] * rng.randrange(5))
        return json.dumps(good).encode()
    if kind == 6:
        good["payload"] = rng.choice([None, [], "x", {"action": "nope"}, {"action": "x" * 1000}])
        return json.dumps(good).encode()
    if kind == 7:
        good["type"] = rng.choice(["response", "error", "notification", "", 7])
        return json.dumps(good).encode()
    if kind == 8:
        good["protocolVersion"] = rng.choice(["9.9", "", "1.2" * 100])
        return json.dumps(good).encode()
    if kind == 9:
        del good[rng.choice(list(good))]
        return json.dumps(good).encode()
    if kind == 10:
        good["metadata"].update(maxHops=0, hopCount=2**40, budget=-5, fanOut=0)
        return json.dumps(good).encode()
    return json.dumps(good).encode()  # some honest-looking ones among them


async def test_ten_thousand_malformed_messages(settings: Settings) -> None:
    rng = random.Random(20261123)
    plain = Settings(**{**{f: getattr(settings, f) for f in settings.__struct_fields__}, "redis_url": None})
    async with Runtime(plain) as server, Runtime(plain) as client:
        (host,) = await server.serve(echo)
        ns = plain.namespace
        nc = await nats.connect(plain.nats_url)
        replies: Counter[str] = Counter()
        expected = 0

        async def on_reply(msg: Any) -> None:
            body = json.loads(msg.data)
            replies[body["type"] if body["type"] == "response" else body["payload"]["error"]["code"]] += 1

        await nc.subscribe("_INBOX.fuzz.>", cb=on_reply)
        honest_ok = 0

        async def honest() -> None:
            nonlocal honest_ok
            for i in range(HONEST // 10):
                assert await client.call("echo", "echo", {"i": i}, timeout=10) == {"i": i}
                honest_ok += 1

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(honest)
            instance = f"a2a.{ns}.inst.echo.{host.instance_id}.fuzz"
            for i in range(MESSAGES):
                kind = i % 10
                if kind < 5:  # requests with a reply subject: each must be answered
                    subject = f"a2a.{ns}.agent.echo.fuzz" if kind < 4 else instance
                    await nc.publish(subject, hostile_request(rng), reply=f"_INBOX.fuzz.{i}")
                    expected += 1
                elif kind == 5:  # requests nobody waits for, notifications
                    await nc.publish(
                        rng.choice([f"a2a.{ns}.agent.echo.fuzz", f"a2a.{ns}.notify.fuzz.t"]),
                        hostile_request(rng),
                    )
                elif kind == 6:  # probes and cancels with junk
                    headers = rng.choice([{PROBE_HEADER: "1"}, {CANCEL_HEADER: "1"}, {CANCEL_HEADER: "\x00"}])
                    await nc.publish(instance, rng.randbytes(rng.randrange(50)), headers=headers)
                elif kind == 7:
                    await nc.publish(
                        f"a2a.{ns}.cancel.echo.fuzz",
                        rng.choice(
                            [
                                rng.randbytes(40),
                                b'{"correlationIds": ' + b"[" * 2000 + b"]" * 2000 + b"}",
                                b'{"correlationIds": ["\xff"]}',
                                json.dumps({"correlationIds": ["x"] * 5000}).encode(),
                            ]
                        ),
                    )
                else:  # replies, acks and batches aimed at the client
                    # In an open deployment anyone may publish on reply subjects (with credentials only the
                    # callee may: tests/security/test_nats_identity.py), so these name no pending call.
                    subject = client.bus.reply_prefix + rng.choice(["x", "", "a.b", "probe-1", "c" * 300])
                    headers = rng.choice(
                        [
                            None,
                            {ACK_HEADER: rng.choice([">", "a b", "echo-1", "x" * 500])},
                            {REPLIES_HEADER: "3"},
                            {REPLIES_HEADER: "x"},
                        ]
                    )
                    await nc.publish(subject, hostile_request(rng), headers=headers)
                if i % 100 == 0:  # a steady stream: a burst past max_queue is shed as OVERLOADED, by design
                    await nc.flush()
                    await anyio.sleep(0.01)
            await nc.flush()
        with anyio.move_on_after(30):
            while sum(replies.values()) < expected:
                await anyio.sleep(0.05)
        print(expected, replies, host.stats, host.accepted)
        await anyio.sleep(0.5)
        await nc.close()

        assert honest_ok == HONEST
        assert sum(replies.values()) == expected  # one typed reply per request, no more
        assert replies["INVALID_ENVELOPE"] > expected // 3
        assert host.accepted == 0 and host.slots.used == 0 and host.slots.waiting == 0
        assert host.stats.invalid > 0
        # Still serving, at full capacity.
        async with anyio.create_task_group() as tg:
            for i in range(16):
                tg.start_soon(client.call, "echo", "echo", {"after": i})
