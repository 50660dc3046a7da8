"""Reply batches through a real nats-server: many replies in few messages, each call its own result."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from a2a import Runtime, Settings
from bus import codec
from bus.protocol import REPLIES_HEADER
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.agents import gated_agent
from transports import NatsTransport

pytestmark = pytest.mark.anyio

CALLS = 50
PLAIN = 5


@pytest.fixture
def nats_settings(nats_url: str, namespace: str) -> Settings:
    return Settings(nats_url=nats_url, redis_url=None, namespace=namespace, audit=False)


async def test_replies_to_one_runtime_travel_together_over_nats(nats_settings: Settings) -> None:
    agent, gate = gated_agent(CALLS + PLAIN)
    spied: list[tuple[str, dict[str, str] | None, bytes]] = []

    async def spy(msg: Any) -> None:
        spied.append((msg.subject, msg.headers, msg.data))

    observer = await NatsTransport.connect(nats_settings.nats_url)
    try:
        await observer.subscribe(f"a2a.{nats_settings.namespace}.reply.>", spy)
        await observer.flush()
        async with Runtime(nats_settings) as server, Runtime(nats_settings) as client:
            await server.serve(agent)
            results: dict[int, Any] = {}

            async def call(i: int) -> None:
                results[i] = await client.call("gated", "echo", {"i": i}, timeout=10)

            # Plain NATS requests among them (the client's own inboxes, not a runtime's
            # reply subjects) get their replies one by one, as always, even asking for batches.
            plain = RequestEnvelope(
                message_id="plain-1",
                source_agent_id="plain",
                target_agent_id="gated",
                conversation_id="c",
                protocol_version=PROTOCOL_VERSION,
                payload=Payload(action="echo", parameters={"plain": True}),
                metadata=Metadata(timestamp=1, correlation_id="plain-1", ttl_ms=10_000, batch_replies=True),
            )
            answers: list[Any] = []

            async def plain_call() -> None:
                subject = f"a2a.{nats_settings.namespace}.agent.gated.raw"
                answers.append(await observer.nc.request(subject, codec.encode_envelope(plain), timeout=10))

            async with anyio.create_task_group() as tg:
                for i in range(CALLS):
                    tg.start_soon(call, i)
                for _ in range(PLAIN):  # one nats-py client: its inboxes share one prefix
                    tg.start_soon(plain_call)
                with anyio.fail_after(10):
                    while server.hosts["gated"].slots.used < CALLS + PLAIN:  # all inside the handler
                        await anyio.sleep(0.005)
                gate.set()
        assert results == {i: {"i": i} for i in range(CALLS)}
        assert len(answers) == PLAIN
        for answer in answers:
            assert json.loads(answer.data)["payload"]["result"] == {"plain": True}
            assert not answer.headers or REPLIES_HEADER not in answer.headers

        with anyio.fail_after(5):
            while sum(_count(h) for _, h, d in spied if d) < CALLS:
                await anyio.sleep(0.01)
        replies = [(s, h, d) for s, h, d in spied if d]
        batches = [(s, h, d) for s, h, d in replies if h and REPLIES_HEADER in h]
        assert batches, "no reply batch crossed the server"
        assert len(replies) < CALLS / 4
        for subject, headers, data in batches:
            lines = data.split(b"\n")
            assert headers is not None and int(headers[REPLIES_HEADER]) == len(lines)
            for line in lines:
                token, envelope = line.split(b" ", 1)
                assert json.loads(envelope)["metadata"]["correlationId"] == token.decode()
            assert subject.rsplit(".", 1)[1] in {line.split(b" ", 1)[0].decode() for line in lines}
    finally:
        await observer.aclose()


def _count(headers: dict[str, str] | None) -> int:
    return int(headers[REPLIES_HEADER]) if headers and REPLIES_HEADER in headers else 1
