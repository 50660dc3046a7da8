"""The audit stream under the generated permissions: it can be read, never redirected.

A JetStream consumer delivers a stream's messages to whatever deliver subject its creator
names, from the server itself: a user allowed to create one could have its own audit
records delivered onto another agent's request subject, as if the sender named there had
published them. nats-server cannot check the deliver subject against the creator's
rights, so no generated user but the admin may create consumers, and readers fetch the
stream's messages one by one instead.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import nats
import pytest

from a2a import Runtime
from a2a.core.connect import connect_nats
from a2a.stores.audit import read_audit, stream_name
from bus.errors import NoResponders
from tests.security.conftest import NAMESPACE, as_user, password

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

STREAM = stream_name(NAMESPACE)
VICTIM = f"a2a.{NAMESPACE}.agent.reader.planner"
"""The reader's request subject for calls from the planner: whatever arrives there is the planner's."""
FORGED = {
    "messageId": "forged",
    "sourceAgentId": "planner",
    "targetAgentId": "reader",
    "conversationId": "c",
    "type": "request",
    "payload": {"action": "read"},
    "metadata": {"timestamp": 1, "correlationId": "k"},
}


def create_requests(user: str, deliver: str) -> list[tuple[str, dict[str, Any]]]:
    """Every form of consumer creation, each asking for delivery onto ``deliver``."""
    own = f"a2a.{NAMESPACE}.audit.{user}"
    config: dict[str, Any] = {
        "deliver_subject": deliver,
        "deliver_group": "reader",  # the queue group its agent subscribes in
        "ack_policy": "none",
        "filter_subject": own,
    }
    api = "$JS.API.CONSUMER"
    return [
        (f"{api}.CREATE.{STREAM}", config),
        (f"{api}.CREATE.{STREAM}.push1", {**config, "name": "push1"}),
        (f"{api}.CREATE.{STREAM}.push2.{own}", {**config, "name": "push2"}),
        (f"{api}.DURABLE.CREATE.{STREAM}.push3", {**config, "durable_name": "push3"}),
    ]


async def test_no_reader_can_have_the_stream_delivered_onto_an_agents_subject(
    secured_nats: str, attacker: Any
) -> None:
    victim = await attacker("reader")
    delivered: list[str] = []

    async def receive(msg: Any) -> None:
        delivered.append(msg.subject)

    # Exactly the subject (nats-server notices a push consumer's interest on literal subscriptions).
    await victim.nc.subscribe(VICTIM, queue="reader", cb=receive)
    await victim.nc.flush()
    refused: dict[str, list[str]] = {}
    for user in ("client", "gateway", "auditor"):
        who = await attacker(user)
        if user != "auditor":  # its own audit record, shaped as a request from the planner
            await who.publish(f"a2a.{NAMESPACE}.audit.{user}", json.dumps(FORGED).encode())
        for subject, config in create_requests(user, VICTIM):
            body = json.dumps({"stream_name": STREAM, "config": config}).encode()
            await who.publish(subject, body, reply=who.nc.new_inbox())
        refused[user] = who.refused
    await anyio.sleep(0.5)
    admin = await nats.connect(secured_nats, user="admin", password=password("admin"))
    try:
        consumers = await admin.jetstream().consumers_info(STREAM)
    finally:
        await admin.close()
    assert (delivered, [c.name for c in consumers]) == ([], [])
    for user, errors in refused.items():  # each attempt refused by the server at once
        denied = [e for e in errors if "permissions violation" in e.lower() and "consumer" in e.lower()]
        assert len(denied) == 4, (user, errors)


async def test_clients_the_gateway_and_the_auditor_still_read_the_audit(secured_nats: str) -> None:
    async with Runtime(as_user(secured_nats, "client")) as rt:
        with pytest.raises(NoResponders):  # the caller audits the refusal
            await rt.call("nobody", "act", timeout=1, conversation_id="audit-read")
    for user in ("client", "gateway", "auditor"):
        transport = await connect_nats(as_user(secured_nats, user))
        try:
            with anyio.fail_after(5):
                while True:
                    records = await read_audit(transport, NAMESPACE, timeout=2)
                    mine = [r for r in records if r.conversation_id == "audit-read"]
                    if mine:
                        break
                    await anyio.sleep(0.05)
        finally:
            await transport.aclose()
        assert [(r.origin, r.target, r.error_code) for r in mine] == [("client", "nobody", "NO_RESPONDERS")]
