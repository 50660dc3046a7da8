"""Durable tasks under the generated permissions: they run, and nobody reaches another's part.

The admin makes the task stream, bucket and consumers (``a2a task setup``); agents and
clients then submit, take, follow and cancel tasks with only the rights ``a2a
nats-config`` gives them. A raw connection as one user then tries every other user's
part: records, outcomes, journals, queues, consumers, acknowledgements.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import nats
import pytest

from a2a import Agent, Context, Runtime
from a2a.cli.task_setup import cmd_setup
from a2a.errors import PermissionDenied
from bus.durable.keys import TaskKeys
from bus.subjects import Subjects
from tests.security.conftest import NAMESPACE, ROSTER, as_user, password

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SUBJECTS = Subjects(NAMESPACE, "x")
STREAM, BUCKET = SUBJECTS.task_stream, SUBJECTS.task_bucket


def agent(name: str) -> Agent:
    a = Agent(name, max_concurrency=4)

    @a.action("echo")
    async def echo(ctx: Context, params: dict[str, Any]) -> Any:
        await ctx.progress({"working": name})
        if params.get("sleep"):
            await anyio.sleep(params["sleep"])
        return {"echo": params.get("text"), "by": name}

    return a


@pytest.fixture(scope="module")
def provisioned(secured_nats: str) -> str:
    """The task store made by the admin, as an operator would (the CLI command itself)."""
    import argparse
    import os

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


def tasks_of(url: str, user: str) -> Any:
    return Runtime(as_user(url, user, tasks=True, task_ack_wait=3.0))


@pytest.fixture
async def served(provisioned: str) -> AsyncIterator[str]:
    async with tasks_of(provisioned, "writer") as w, tasks_of(provisioned, "reader") as r:
        await w.serve(agent("writer"))
        await r.serve(agent("reader"))
        yield provisioned


async def test_agents_and_clients_run_follow_and_cancel_tasks_under_the_generated_permissions(
    served: str,
) -> None:
    async with tasks_of(served, "planner") as planner, tasks_of(served, "client") as client:
        with anyio.fail_after(15):
            task = await planner.tasks.submit("writer", "echo", {"text": "hi"}, key="k1")
            assert await task.result() == {"echo": "hi", "by": "writer"}
            again = await planner.tasks.submit("writer", "echo", {"text": "hi"}, key="k1")
            kinds = [e.kind for e in [e async for e in (await planner.tasks.get(task.id)).events()]]
            mine = await client.tasks.submit("reader", "echo", {"text": "x", "sleep": 30}, user_id="alice")
            async for event in mine.events():
                if event.kind == "progress":
                    break
            cancelled = await (await client.tasks.get(mine.id, user_id="alice")).cancel()
    assert again.id == task.id and not again.created
    assert kinds == ["attempt", "progress", "ended"]
    assert cancelled.state == "cancelled"
    admin = await nats.connect(served, user="admin", password=password("admin"))
    try:  # every delivery was acknowledged (a work queue keeps only what is not)
        with anyio.fail_after(5):
            while (await admin.jetstream().stream_info(STREAM)).state.messages:
                await anyio.sleep(0.05)
    finally:
        await admin.close()


async def test_nobody_reaches_another_identitys_tasks(served: str, attacker: Any) -> None:
    async with tasks_of(served, "planner") as planner, tasks_of(served, "client") as client:
        with anyio.fail_after(15):
            task = await planner.tasks.submit("writer", "echo", {"text": "secret"})
            assert (await task.result())["echo"] == "secret"
            theirs = await client.tasks.submit("reader", "echo", {"text": "other"}, user_id="alice")
            await theirs.result()
        with pytest.raises(PermissionDenied):  # another identity's id names nothing for it
            await client.tasks.get(task.id, user_id=None)
    at = TaskKeys.of(task.record)
    kv, get = f"$KV.{BUCKET}", f"$JS.API.DIRECT.GET.KV_{BUCKET}.$KV.{BUCKET}"
    reader = await attacker("reader")  # an agent the task never went to
    reads = [f"{get}.{at.record}", f"{get}.{at.outcome}", f"{get}.{at.event(1)}", f"{get}.{at.checkpoint}"]
    writes = [f"{kv}.{at.outcome}", f"{kv}.{at.cancel}", f"{kv}.{at.event(9)}", f"{kv}.{at.record}"]
    queues = [f"a2a.{NAMESPACE}.taskq.writer.planner", f"a2a.{NAMESPACE}.taskq.writer.reader"]
    api = [
        f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.writer",
        f"$JS.API.CONSUMER.CREATE.{STREAM}.mine",
        f"$JS.API.STREAM.MSG.GET.KV_{BUCKET}",
        f"$JS.API.STREAM.CREATE.{STREAM}",
        f"$JS.ACK.{STREAM}.writer.1.1.1.1.0",
    ]
    for subject in [*reads, *writes, *queues, *api]:
        await reader.publish(
            subject, json.dumps({"state": "completed", "result": "forged"}).encode(), reply="_INBOX_reader.x"
        )
    updates = SUBJECTS.task_updates
    spied = (f"{kv}.outcome.*.planner.*", f"{kv}.>", f"{updates}.>", f"{updates}.outcome.*.planner.*")
    for subject in (*spied, f"{updates}.cancel.writer.*.*"):
        await reader.nc.subscribe(subject)
    await reader.nc.flush()
    gateway = await attacker("gateway")  # a client identity reading the other client's task
    theirs_at = TaskKeys.of(theirs.record)
    for subject in (f"{get}.{theirs_at.record}", f"{get}.{theirs_at.outcome}", f"{kv}.{theirs_at.cancel}"):
        await gateway.publish(subject, b"", reply="_INBOX_gateway.x")
    await anyio.sleep(0.3)
    refused = [e.lower() for e in reader.refused]
    for subject in [*reads, *writes, *queues, *api]:
        assert any(f'publish to "{subject.lower()}"' in e for e in refused), (subject, reader.refused)
    assert sum("subscription to" in e for e in refused) == 5, reader.refused
    assert len([e for e in gateway.refused if "permissions violation" in e.lower()]) == 3, gateway.refused
    async with tasks_of(served, "planner") as planner:  # the task is as it was
        assert await (await planner.tasks.get(task.id)).result() == {"echo": "secret", "by": "writer"}
