"""Requests as conformance suites write them: long push-config ids.

The official A2A TCK gives its push configurations ids of about 90 characters (a prefix
and a UUID).
"""

from __future__ import annotations

import uuid

import pytest

from a2a import Settings
from a2a.gateway import GatewayConfig

from .conftest import AGENTS, Gateway, gateway_on, message, runtime_serving

pytestmark = pytest.mark.anyio

LOOPBACK = GatewayConfig(default_timeout=10, push_allow_cidrs=("127.0.0.0/8",))
HOOK = "http://127.0.0.1:9/hook"


async def a_task(gw: Gateway) -> str:
    task = await gw.send(message(text="hello"), agent="echo")
    return str(task["id"])


async def test_push_config_ids_of_up_to_128_characters(settings: Settings) -> None:
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=LOOPBACK) as gw:
        task_id = await a_task(gw)
        tck_like = f"test_create_task_push_notification_config_nonexistent_{uuid.uuid4()}"
        for config_id in (tck_like, "x" * 128):
            created = await gw.rpc(
                "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK, "id": config_id}
            )
            assert created["result"]["id"] == config_id, created
            got = await gw.rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": config_id})
            assert got["result"]["id"] == config_id, got
        too_long = await gw.rpc(
            "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK, "id": "x" * 129}
        )
        assert too_long["error"]["code"] == -32602 and "1-128" in too_long["error"]["message"]
        for bad in ("a|b", "a#b", "a b"):
            refused = await gw.rpc(
                "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK, "id": bad}
            )
            assert refused["error"]["code"] == -32602, refused
