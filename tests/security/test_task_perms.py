"""Durable tasks under the generated permissions: each identity reaches its own part of the
task store, and nobody can have the server publish bytes of its choosing where it counts.

The server answers a JetStream request on whatever reply subject the requester names, and a
direct get or a pull answers with stored bytes themselves. In one account, a user that may
store bytes in a key of its own and read them back could have the server write another's
key, queue a task in another's name or plant an audit record. So JetStream lives in an
account of its own whose subjects the users' account imports: the answers land in the
users' account, where no stream keeps them and the runtime drops them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import nats
import pytest

from a2a import Agent, Context, Runtime
from a2a.cli.task_setup import cmd_setup
from a2a.errors import PermissionDenied, Unavailable
from bus import codec
from bus.durable import keys
from bus.subjects import Subjects
from bus.wire import PROTOCOL_VERSION, Metadata, NotificationEnvelope, Payload, RequestEnvelope
from tests.security.conftest import NAMESPACE, ROSTER, as_user, password
from transports import NatsTransport

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SUBJECTS = Subjects(NAMESPACE, "x")
STREAM, BUCKET = SUBJECTS.task_stream, SUBJECTS.task_bucket
KV = f"$KV.{BUCKET}."


def direct_get(key: str) -> str:
    return f"$JS.API.DIRECT.GET.KV_{BUCKET}.{KV}{key}"


@pytest.fixture(scope="module")
def provisioned(secured_nats: str) -> str:
    """The task store made by the admin, as an operator would (the CLI command itself)."""
    env = {"NATS_URL": secured_nats, "A2A_NAMESPACE": NAMESPACE, "NATS_USER": "admin"}
    old = {k: os.environ.get(k) for k in [*env, "NATS_PASSWORD"]}
    os.environ.update(env, NATS_PASSWORD="admin-pw")
    try:
        args = argparse.Namespace(
            roster=str(ROSTER), agent=[], replicas=1, memory=True, nats_url=None, namespace=None
        )
        assert cmd_setup(args) == 0
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return secured_nats


class Seen:
    """What the agents' handlers ran."""

    def __init__(self) -> None:
        self.writes: list[dict[str, Any]] = []
        self.reads: list[str] = []
        self.news: list[dict[str, Any]] = []
        self.effects = 0
        self.release = anyio.Event()

    async def running(self) -> None:
        """Until the writer's handler runs."""
        with anyio.fail_after(10):
            while not self.writes:
                await anyio.sleep(0.02)


def agents(seen: Seen) -> tuple[Agent, Agent]:
    writer, reader = Agent("writer"), Agent("reader")

    @writer.action("write")
    async def write(ctx: Context, params: dict[str, Any]) -> Any:
        seen.writes.append(params)
        if params.get("hold"):
            with anyio.fail_after(20):
                await seen.release.wait()

        async def charge() -> str:
            seen.effects += 1
            return "receipt"

        receipt = await ctx.task.effect("charge", charge)
        await ctx.task.checkpoint({"receipt": receipt})
        await ctx.progress({"step": "read"})
        child = await ctx.submit("reader", "read", {"for": ctx.task.task_id})
        return {"receipt": receipt, "read": await child.result(), "by": ctx.request.source_agent_id}

    @reader.on("news")
    async def news(ctx: Context, params: dict[str, Any]) -> None:
        seen.news.append(params)

    @reader.action("read")
    async def read(ctx: Context, params: dict[str, Any]) -> Any:
        seen.reads.append(ctx.request.source_agent_id)
        return {"text": "from reader"}

    return writer, reader


@pytest.fixture
async def deployment(provisioned: str) -> AsyncIterator[tuple[dict[str, Runtime], Seen]]:
    """writer and reader taking their tasks, planner and client submitting, each as its own user."""
    seen = Seen()
    writer, reader = agents(seen)
    async with (
        Runtime(as_user(provisioned, "writer", tasks=True)) as w,
        Runtime(as_user(provisioned, "reader", tasks=True)) as r,
        Runtime(as_user(provisioned, "planner", tasks=True)) as p,
        Runtime(as_user(provisioned, "client", tasks=True)) as c,
    ):
        await w.serve(writer)
        await r.serve(reader)
        yield {"writer": w, "reader": r, "planner": p, "client": c}, seen
        seen.release.set()


async def raw(url: str, user: str) -> tuple[Any, list[str]]:
    """A plain nats-py connection as ``user``, and the permission errors the server sends it."""
    refused: list[str] = []

    async def on_error(exc: Exception) -> None:
        refused.append(str(exc).lower())

    nc = await nats.connect(url, user=user, password=password(user), error_cb=on_error, allow_reconnect=False)
    return nc, refused


async def test_tasks_run_under_the_generated_permissions(deployment: Any) -> None:
    """Submitting, taking, effects, checkpoints, progress, a child task and the journal, as the
    roster's users (the agents both submit and take) and as a client."""
    rts, seen = deployment
    by_planner = await rts["planner"].tasks.submit("writer", "write", {"n": 1}, timeout=30)
    by_client = await rts["client"].tasks.submit("writer", "write", {"n": 2}, key="k-1", timeout=30)
    with anyio.fail_after(20):
        first, second = await by_planner.result(), await by_client.result()
        events = [e async for e in by_planner.events()]
    again = await rts["client"].tasks.submit("writer", "write", {"n": 2}, key="k-1", timeout=30)
    assert first == {"receipt": "receipt", "read": {"text": "from reader"}, "by": "planner"}
    assert second["by"] == "client" and again.id == by_client.id and not again.created
    assert seen.effects == 2 and sorted(seen.reads) == ["writer", "writer"]
    kinds = [e.kind for e in events]
    assert kinds[0] == "attempt" and "progress" in kinds and "child" in kinds and kinds[-1] == "ended"


async def test_another_user_can_neither_read_nor_follow_nor_end_a_task(deployment: Any) -> None:
    rts, seen = deployment
    url = rts["planner"].settings.nats_url
    task = await rts["planner"].tasks.submit("writer", "write", {"hold": True}, timeout=30)
    await seen.running()
    # Through the runtime: another identity's tasks are not in its part of the store.
    with pytest.raises(PermissionDenied):
        await rts["client"].tasks.get(task.id)
    with pytest.raises(Unavailable, match="cannot be listed"):  # the key names are everyone's
        await rts["client"].tasks.list()
    # Raw, as the reader (an agent the planner may invoke too) and as a client.
    at = keys.TaskKeys("writer", "planner", task.id)
    for user in ("reader", "client"):
        nc, refused = await raw(url, user)
        try:
            await nc.publish(direct_get(at.record), b"", reply=nc.new_inbox())
            await nc.publish(direct_get(at.outcome), b"", reply=nc.new_inbox())
            await nc.subscribe(f"{SUBJECTS.task_updates}.{at.outcome}")
            await nc.publish(KV + at.cancel, b"{}")
            await nc.publish(KV + at.outcome, b'{"state": "completed", "result": "forged"}')
            await nc.flush()
            await anyio.sleep(0.3)
        finally:
            await nc.close()
        assert sum("permissions violation" in e for e in refused) == 5, (user, refused)
    seen.release.set()
    with anyio.fail_after(20):
        result = await task.result()
    assert result["by"] == "planner" and result["receipt"] == "receipt"


def forged_notification(source: str, topic: str) -> bytes:
    return codec.encode_envelope(
        NotificationEnvelope(
            message_id="m2",
            source_agent_id=source,
            target_agent_id=topic,
            conversation_id="c2",
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(action=topic, parameters={"forged": True}),
            metadata=Metadata(timestamp=int(time.time() * 1000), correlation_id="forged-2", ttl_ms=5000),
        )
    )


def forged_request(source: str, target: str) -> bytes:
    return codec.encode_envelope(
        RequestEnvelope(
            message_id="m1",
            source_agent_id=source,
            target_agent_id=target,
            conversation_id="c1",
            protocol_version=PROTOCOL_VERSION,
            payload=Payload(action="write" if target == "writer" else "read", parameters={"forged": True}),
            metadata=Metadata(timestamp=1, correlation_id="forged-1", ttl_ms=5000),
        )
    )


async def test_the_server_cannot_be_made_to_carry_a_users_bytes(deployment: Any) -> None:
    """A user stores bytes in its own key and has the server answer its direct get onto
    another's request subject, another's key, a task queue, an audit subject and the bucket's
    republish subject; an agent has its own pull answered onto another's request subject.
    Nothing is stored, queued, run or believed."""
    rts, seen = deployment
    url = rts["planner"].settings.nats_url
    held = await rts["planner"].tasks.submit("writer", "write", {"hold": True}, timeout=30)
    await seen.running()
    at = keys.TaskKeys("writer", "planner", held.id)
    admin = await nats.connect(url, user="admin", password=password("admin"))
    js = admin.jetstream()
    queued_before = (await js.stream_info(STREAM)).state.messages
    audit_before = (await js.stream_info(SUBJECTS.audit_stream)).state.messages
    reflected_before = {n: rts[n].bus.link.transport.reflected for n in ("writer", "reader")}
    planner = Subjects(NAMESPACE, "planner")

    audit_heard: list[bytes] = []

    async def heard(msg: Any) -> None:
        audit_heard.append(msg.data)

    await rts["client"].subscribe_audit(heard)
    nc, refused = await raw(url, "reader")
    mine, news = keys.record("reader", "forged"), keys.record("reader", "news")
    try:
        await nc.publish(KV + mine, forged_request("planner", "writer"))
        await nc.publish(KV + news, forged_notification("planner", "news"))
        await nc.flush()
        await anyio.sleep(0.2)
        await nc.publish(direct_get(news), b"", reply=planner.notify("news"))  # news in its name
        for onto in (
            planner.agent("writer"),  # a request in the planner's name
            KV + at.outcome,  # the planner's task ended by the reader
            planner.task_queue("writer"),  # a task queued in its name
            planner.audit("planner"),  # an audit record in its name
            f"{SUBJECTS.task_updates}.{at.outcome}",  # a stored outcome heard by the planner
        ):
            await nc.publish(direct_get(mine), b"", reply=onto)
        await nc.flush()
        await anyio.sleep(0.5)
    finally:
        await nc.close()
    assert refused == [], refused  # every request was the reader's right: the server carried them
    assert [w for w in seen.writes if w.get("forged")] == [] and seen.news == []
    assert [a for a in audit_heard if b"forged" in a] == []  # an audit watcher was not fooled
    assert rts["writer"].bus.link.transport.reflected > reflected_before["writer"]
    assert (await js.stream_info(SUBJECTS.audit_stream)).state.messages == audit_before
    assert (await js.stream_info(STREAM)).state.messages == queued_before  # nothing queued
    with pytest.raises(nats.js.errors.KeyNotFoundError):  # the held task has no outcome yet
        await (await js.key_value(BUCKET)).get(at.outcome)
    await admin.close()
    seen.release.set()
    with anyio.fail_after(20):
        assert (await held.result())["by"] == "planner"


async def test_a_pull_is_not_answered_onto_anothers_subject(provisioned: str) -> None:
    """The writer pulls a task the planner queued for it, the answer onto the reader's request
    subject in the planner's name and onto the planner's audit subject: the reader drops it,
    the audit stream does not keep it."""
    seen = Seen()
    _, reader = agents(seen)
    planner = Subjects(NAMESPACE, "planner")
    async with (
        Runtime(as_user(provisioned, "reader")) as r,
        Runtime(as_user(provisioned, "planner", tasks=True)) as p,
        Runtime(as_user(provisioned, "client")) as c,
    ):
        await r.serve(reader)
        audit_heard: list[bytes] = []

        async def heard(msg: Any) -> None:
            audit_heard.append(msg.data)

        await c.subscribe_audit(heard)
        admin = await nats.connect(provisioned, user="admin", password=password("admin"))
        js = admin.jetstream()
        audit_before = (await js.stream_info(SUBJECTS.audit_stream)).state.messages
        # Queued for the writer, which nobody serves: short-lived, so no later test takes it.
        for _ in range(2):
            await p.tasks.submit("writer", "write", {"forged": True}, timeout=2)
        nc, refused = await raw(provisioned, "writer")
        pull = json.dumps({"batch": 1, "expires": 2_000_000_000}).encode()
        try:
            for onto in (planner.agent("reader"), planner.audit("planner")):
                await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.writer", pull, reply=onto)
            await nc.flush()
            await anyio.sleep(1.0)
        finally:
            await nc.close()
        transport = r.bus.link.transport
        assert isinstance(transport, NatsTransport)
        reflected = transport.reflected
        audit_after = (await js.stream_info(SUBJECTS.audit_stream)).state.messages
        await admin.close()
    assert refused == [], refused
    assert seen.reads == [] and [a for a in audit_heard if b"forged" in a] == []
    assert audit_after == audit_before
    assert reflected >= 1  # the reader's runtime dropped the one onto its request subject
