"""The envelope floor of ``a2a bench`` is a real round trip through nats-server: the
requester's compact request is what a runtime's callee reads, and the responder's answer
is what a runtime's caller reads."""

from __future__ import annotations

import nats
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.bench.floor import envelope_subject, floor_call, floor_respond

pytestmark = pytest.mark.anyio


async def test_the_floor_carries_an_envelope_each_way(settings: Settings) -> None:
    nc = await nats.connect(settings.nats_url)
    try:
        subject = envelope_subject(settings.namespace)
        await nc.subscribe(subject, cb=floor_respond)
        await nc.flush()
        assert await floor_call(nc, subject, "client", {"text": "x" * 64}) == {"text": "x" * 64}
    finally:
        await nc.close()


async def test_a_runtime_answers_the_floors_request_and_it_reads_the_answer(settings: Settings) -> None:
    echo = Agent("bench-echo")

    @echo.action("echo")
    async def _echo(ctx: Context, params: dict[str, object]) -> object:
        request = ctx.request
        return {**params, "named_after_tree": request.conversation_id == request.metadata.correlation_id}

    nc = await nats.connect(settings.nats_url)
    try:
        async with Runtime(settings) as server:
            await server.serve(echo)
            got = await floor_call(nc, server.bus.subjects.agent("bench-echo"), "client", {"n": 1})
    finally:
        await nc.close()
    assert got == {"n": 1, "named_after_tree": True}  # the left-out conversation id, filled in
