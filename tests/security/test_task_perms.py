"""Durable tasks under the generated permissions: nobody gets a right through which the
server would publish bytes of the requester's choosing.

The server answers a JetStream request on whatever reply subject the requester names; a
direct get answers with the stored bytes themselves. A user that may store bytes in a key
of its own and read them back by direct get could thus have the server publish a message
of its choosing on any subject: a request in another's name, a write to another's key, a
JetStream API request. So no generated user may read or write the task bucket, and durable
tasks need an account of their own before they run under these permissions.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import anyio
import nats
import pytest

from a2a import Runtime
from a2a.cli.nats_config import render_authorization
from a2a.cli.task_setup import cmd_setup
from a2a.delegation.roster import Roster
from a2a.errors import Unavailable
from bus.subjects import Subjects
from tests.security.conftest import NAMESPACE, ROSTER, as_user, password

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SUBJECTS = Subjects(NAMESPACE, "x")
STREAM, BUCKET = SUBJECTS.task_stream, SUBJECTS.task_bucket


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


def test_no_generated_user_may_read_or_write_the_task_bucket() -> None:
    rendered = render_authorization(Roster.load(ROSTER), NAMESPACE)
    assert "DIRECT.GET" not in rendered and "$KV." not in rendered


async def test_the_admin_makes_the_store_and_a_user_can_neither_read_it_nor_have_it_reflected(
    provisioned: str, attacker: Any
) -> None:
    admin = await nats.connect(provisioned, user="admin", password=password("admin"))
    try:
        js = admin.jetstream()
        consumers = sorted(c.name for c in await js.consumers_info(STREAM))
        kv = await js.key_value(BUCKET)
        await kv.put("checkpoint.reader.x.y", b'{"forged": true}')
    finally:
        await admin.close()
    assert consumers == ["planner", "reader", "writer"]
    reader = await attacker("reader")
    direct = f"$JS.API.DIRECT.GET.KV_{BUCKET}.$KV.{BUCKET}.checkpoint.reader.x.y"
    await reader.publish(direct, b"", reply=f"a2a.{NAMESPACE}.agent.writer.planner")
    await reader.publish(f"$KV.{BUCKET}.outcome.writer.planner.t1", b"{}")
    await anyio.sleep(0.3)
    refused = [e.lower() for e in reader.refused]
    assert any("direct.get" in e for e in refused) and any("$kv." in e for e in refused), reader.refused


async def test_a_runtime_asking_for_tasks_under_these_permissions_is_told_why_not(provisioned: str) -> None:
    with anyio.fail_after(20), pytest.raises(Unavailable, match="durable tasks need JetStream"):
        async with Runtime(as_user(provisioned, "writer", tasks=True)):
            pass
