"""The envelope floor of ``a2a bench``: what an envelope each way costs with nothing else.

A raw nats-py requester that builds each request as a runtime does (new ids, a new
conversation named after its call tree), sends it in the compact form and decodes the
compact reply, against a raw nats-py responder that decodes the request and encodes its
compact response: no check, no lease, no reply cache, no audit. The gap between raw
nats-py and this floor is the envelope's own; the gap between the floor and the runtime
is everything the runtime does besides.
"""

from __future__ import annotations

import time
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg

from bus.compact import compact_response, decode_compact, decode_reply, encode_compact
from bus.ids import new_id, serial_id
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope, ResponseEnvelope

__all__ = ["envelope_subject", "floor_call", "floor_respond"]


def envelope_subject(namespace: str) -> str:
    return f"bench.envelope.{namespace}"


async def floor_respond(msg: Msg) -> None:
    """Answer one request as the floor's responder: decode it, echo its parameters."""
    request = decode_compact(msg.data)
    assert type(request) is RequestEnvelope
    now = int(time.time() * 1000)
    await msg.respond(compact_response(request, serial_id(), "echo", request.payload.parameters, None, now))


async def floor_call(nc: Client, subject: str, source: str, params: dict[str, Any]) -> Any:
    """One echo call as the floor's requester; its result."""
    now, tree = int(time.time() * 1000), new_id()
    request = RequestEnvelope(
        message_id=new_id(),
        source_agent_id=source,
        target_agent_id="bench-echo",
        conversation_id=tree,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="echo", parameters=params),
        metadata=Metadata(
            timestamp=now, correlation_id=tree, hop_count=1, ttl_ms=10_000, deadline=now + 10_000
        ),
    )
    msg = await nc.request(subject, encode_compact(request, elide=True), timeout=10)
    reply = decode_reply(msg.data, request)
    assert type(reply) is ResponseEnvelope
    return reply.payload.result
