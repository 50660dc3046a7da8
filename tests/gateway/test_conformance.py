"""Requests as conformance suites write them: proto field names, long push-config ids.

ProtoJSON parsers take a field's proto name (``task_id``) as well as its JSON name
(``taskId``); the official A2A TCK names push-config request fields the proto way and
gives its configurations ids of about 90 characters (a prefix and a UUID).
"""

from __future__ import annotations

import uuid

import pytest

from a2a import Settings
from a2a.gateway import GatewayConfig

from .conftest import AGENTS, V1, Gateway, gateway_on, message, runtime_serving

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


async def test_push_config_requests_with_proto_field_names(settings: Settings) -> None:
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=LOOPBACK) as gw:
        task_id = await a_task(gw)
        created = await gw.rpc(
            "CreateTaskPushNotificationConfig", {"task_id": task_id, "url": HOOK, "id": "c1"}
        )
        assert created["result"]["taskId"] == task_id, created
        listed = await gw.rpc("ListTaskPushNotificationConfigs", {"task_id": task_id})
        assert [c["id"] for c in listed["result"]["configs"]] == ["c1"], listed
        got = await gw.rpc("GetTaskPushNotificationConfig", {"task_id": task_id, "id": "c1"})
        assert got["result"]["url"] == HOOK, got
        # Named both ways, the JSON name counts.
        both = await gw.rpc("ListTaskPushNotificationConfigs", {"taskId": task_id, "task_id": "elsewhere"})
        assert [c["id"] for c in both["result"]["configs"]] == ["c1"], both
        deleted = await gw.rpc("DeleteTaskPushNotificationConfig", {"task_id": task_id, "id": "c1"})
        assert deleted["result"] is None, deleted
        listed = await gw.rpc("ListTaskPushNotificationConfigs", {"task_id": task_id})
        assert listed["result"].get("configs", []) == [], listed
        # REST bodies too.
        r = await gw.client.post(
            f"/tasks/{task_id}/pushNotificationConfigs",
            json={"url": HOOK, "id": "c2", "task_id": "x"},
            headers=V1,
        )
        assert r.status_code == 200 and r.json()["taskId"] == task_id, r.text
        sent = {"message_id": "m-rest", "role": "ROLE_USER", "parts": [{"text": "over rest"}]}
        r = await gw.client.post("/agents/echo/message:send", json={"message": sent}, headers=V1)
        assert r.status_code == 200, r.text
        assert r.json()["task"]["history"][0]["messageId"] == "m-rest", r.text


async def test_messages_with_proto_field_names_keep_free_form_keys(settings: Settings) -> None:
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=LOOPBACK) as gw:
        msg = {
            "message_id": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": "hi", "media_type": "text/plain"}],
            "metadata": {"snake_key": 1},
        }
        params = {"message": msg, "configuration": {"history_length": 1}, "metadata": {"other_key": 2}}
        body = await gw.rpc("SendMessage", params, agent="echo")
        task = body["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", body
        assert [p["text"] for a in task["artifacts"] for p in a["parts"]] == ["hi"]
        (kept,) = task["history"]
        assert kept["messageId"] == msg["message_id"] and kept["metadata"] == {"snake_key": 1}, kept
        # A key that is neither name of a field is still refused, as before.
        bad = await gw.rpc("GetTask", {"task_identifier": task["id"]})
        assert bad["error"]["code"] == -32602, bad
