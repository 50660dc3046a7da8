"""Seed 000: ``allow_sub_agent_calls`` is false by default, also with no roster at all.

A runtime given neither a roster nor ``A2A_OPEN`` is closed: an agent's call to another
is refused by the caller and, for a request sent past the caller, by the callee, with a
message naming the two ways to open it. A call from outside any agent still works.
"""

from __future__ import annotations

import time
import uuid

import msgspec
import pytest

from a2a import Runtime, Settings
from a2a.errors import PermissionDenied
from bus import codec
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.agents import echo, relay
from tests.helpers import raw_exchange

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

FORWARD = {"target": "echo", "action": "echo", "params": {"n": 1}}


def closed_settings(nats_url: str, redis_url: str, namespace: str) -> Settings:
    """Settings as a deployment with no A2A_ROSTER and no A2A_OPEN reads them."""
    return Settings.from_env(
        {}, nats_url=nats_url, redis_url=redis_url, namespace=namespace, heartbeat_interval=0.25
    )


def from_relay(depth: int) -> bytes:
    """A request to echo claiming to come from the agent relay, as a plain NATS client sends it."""
    env = RequestEnvelope(
        message_id=uuid.uuid4().hex,
        source_agent_id="relay",
        target_agent_id="echo",
        conversation_id=uuid.uuid4().hex,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="echo", parameters={"n": 2}),
        metadata=Metadata(
            timestamp=int(time.time() * 1000),
            correlation_id=uuid.uuid4().hex,
            ttl_ms=5000,
            depth=depth,
            call_chain=["relay"] if depth else [],
        ),
    )
    return codec.encode_envelope(env)


async def test_without_a_roster_or_a2a_open_an_agents_call_is_refused(
    nats_url: str, redis_url: str, namespace: str
) -> None:
    settings = closed_settings(nats_url, redis_url, namespace)
    assert settings.open is False and settings.roster is None
    async with Runtime(settings) as rt:
        await rt.serve(echo, relay)
        assert await rt.call("echo", "echo", {"n": 0}) == {"n": 0}  # from outside any agent
        with pytest.raises(PermissionDenied, match="A2A_OPEN") as refused:
            await rt.call("relay", "forward", FORWARD)
        assert "relay may not call other agents" in refused.value.message
        # The callee re-checks: the same call sent past the caller's check is refused too.
        reply = await raw_exchange(rt.bus.transport, rt.bus.subjects.agent("echo"), from_relay(depth=1))
        assert reply["type"] == "error", reply
        error = reply["payload"]["error"]
        assert error["code"] == "PERMISSION_DENIED" and "A2A_OPEN" in error["message"]


async def test_the_same_runtime_with_a2a_open_lets_agents_call_each_other(
    nats_url: str, redis_url: str, namespace: str
) -> None:
    opened = Settings.from_env(
        {"A2A_OPEN": "1"},
        nats_url=nats_url,
        redis_url=redis_url,
        namespace=namespace,
        heartbeat_interval=0.25,
    )
    assert opened == msgspec.structs.replace(closed_settings(nats_url, redis_url, namespace), open=True)
    async with Runtime(opened) as rt:
        await rt.serve(echo, relay)
        out = await rt.call("relay", "forward", FORWARD)
        assert out["result"] == {"n": 1}
