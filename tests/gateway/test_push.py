"""Push notifications: configurations over both bindings, the URL guard, and delivery to a real
HTTP receiver that is down for a while, or outlives a gateway restart."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from a2a import Settings
from a2a.gateway import Authenticator, GatewayConfig
from a2a.gateway.push_sender import verify

from .conftest import AGENTS, V1, Gateway, gateway_on, message, runtime_serving
from .webhook import Receiver, receiver

__all__ = ["receiver"]  # the fixture

pytestmark = pytest.mark.anyio

LOOPBACK = GatewayConfig(
    default_timeout=10, push_allow_cidrs=("127.0.0.0/8",), push_backoff=0.2, push_backoff_max=1.5
)
SECRET = "a-secret-of-the-test-receiver"


def push_config(url: str, **fields: Any) -> dict[str, Any]:
    return {"url": url, "authentication": {"scheme": "HMAC-SHA256", "credentials": SECRET}, **fields}


async def a_task(gw: Gateway) -> str:
    task = await gw.send(message(text="hello"), agent="echo")
    return str(task["id"])


def check_delivered(receiver: Receiver, events: dict[str, dict[str, Any]], task_id: str) -> None:
    """Every event 1..n arrived, each signed, carrying the token, none twice."""
    numbers = sorted(int(i.rpartition(":")[2]) for i in events)
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    ids = [h["x-a2a-event-id"] for h, _ in receiver.got]
    assert len(ids) == len(set(ids)), ids
    for headers, body in receiver.got:
        assert verify(SECRET, headers, body), headers
        assert headers["x-a2a-notification-token"] == "tok-1"
        assert headers["content-type"] == "application/a2a+json"
    kinds = [next(iter(events[f"{task_id}:{n}"])) for n in numbers]
    assert "artifactUpdate" in kinds and kinds[-1] == "statusUpdate", kinds


async def test_configs_over_jsonrpc_both_versions(settings: Settings) -> None:
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=LOOPBACK) as gw:
        task_id = await a_task(gw)
        url = "http://127.0.0.1:9/hook"
        created = await gw.rpc(
            "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url, "token": "t"}
        )
        config = created["result"]
        assert config["taskId"] == task_id and config["url"] == url and config["token"] == "t"
        assert config["authentication"]["scheme"] == "HMAC-SHA256"  # the secret the gateway made
        assert len(config["authentication"]["credentials"]) >= 32
        got = await gw.rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": config["id"]})
        assert got["result"] == config
        listed = await gw.rpc("ListTaskPushNotificationConfigs", {"taskId": task_id})
        assert listed["result"]["configs"] == [config]
        deleted = await gw.rpc("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": config["id"]})
        assert deleted == {"jsonrpc": "2.0", "id": 1, "result": None}
        gone = await gw.rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": config["id"]})
        assert gone["error"]["code"] == -32001

        legacy = {"pushNotificationConfig": {"id": "old", "url": url}, "taskId": task_id}
        set03 = await gw.rpc("tasks/pushNotificationConfig/set", legacy, headers={})
        assert set03["result"]["taskId"] == task_id
        assert set03["result"]["pushNotificationConfig"]["id"] == "old"
        ref = {"id": task_id, "pushNotificationConfigId": "old"}
        get03 = await gw.rpc("tasks/pushNotificationConfig/get", ref, headers={})
        assert get03["result"] == set03["result"]
        list03 = await gw.rpc("tasks/pushNotificationConfig/list", {"id": task_id}, headers={})
        assert list03["result"] == [set03["result"]]
        del03 = await gw.rpc("tasks/pushNotificationConfig/delete", ref, headers={})
        assert del03["result"] is None
        assert (await gw.rpc("ListTaskPushNotificationConfigs", {"taskId": task_id}))["result"] == {}


async def test_configs_over_rest_and_caps(settings: Settings) -> None:
    config = GatewayConfig(default_timeout=10, push_allow_private=True, max_push_configs_per_task=2)
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=config) as gw:
        task_id = await a_task(gw)
        base = f"/tasks/{task_id}/pushNotificationConfigs"
        r = await gw.client.post(base, json=push_config("http://127.0.0.1:9/a", id="a"), headers=V1)
        assert r.status_code == 200, r.text
        assert r.json()["id"] == "a" and r.json()["taskId"] == task_id
        r = await gw.client.post(base, json={"url": "http://127.0.0.1:9/b"}, headers=V1)
        assert r.status_code == 200, r.text
        b = r.json()["id"]
        r = await gw.client.post(base, json={"url": "http://127.0.0.1:9/c"}, headers=V1)
        assert r.status_code == 400 and "most allowed" in r.text
        r = await gw.client.post(base, json=push_config("http://127.0.0.1:9/a2", id="a"), headers=V1)
        assert r.status_code == 200, r.text  # the same id replaces
        listed = (await gw.client.get(base, headers=V1)).json()["configs"]
        assert sorted((c["id"], c["url"]) for c in listed) == sorted(
            [("a", "http://127.0.0.1:9/a2"), (b, "http://127.0.0.1:9/b")]
        )
        assert (await gw.client.get(f"{base}/a", headers=V1)).json()["url"] == "http://127.0.0.1:9/a2"
        r = await gw.client.delete(f"{base}/a", headers=V1)
        assert r.status_code == 200 and r.json() == {}
        assert (await gw.client.get(f"{base}/a", headers=V1)).status_code == 404
        assert (await gw.client.get("/tasks/nope/pushNotificationConfigs", headers=V1)).status_code == 404
        short = push_config(
            "http://127.0.0.1:9/a", authentication={"scheme": "HMAC-SHA256", "credentials": "x"}
        )
        assert (await gw.client.post(base, json=short, headers=V1)).status_code == 400


async def test_another_users_task_is_not_found(settings: Settings, tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    keys.write_text("alice: key-of-alice\nbob: key-of-bob\n")
    alice, bob = {"X-API-Key": "key-of-alice"}, {"X-API-Key": "key-of-bob"}
    auth = Authenticator.from_files(keys)
    async with (
        runtime_serving(settings, *AGENTS) as runtime,
        gateway_on(runtime, config=LOOPBACK, auth=auth) as gw,
    ):
        task = await gw.send(message(text="mine"), agent="echo", headers=alice)
        params = {"taskId": task["id"], "url": "http://127.0.0.1:9/hook", "id": "x"}
        mine = await gw.rpc("CreateTaskPushNotificationConfig", params, headers={**V1, **alice})
        assert "result" in mine, mine
        for method, p in [
            ("CreateTaskPushNotificationConfig", params),
            ("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "x"}),
            ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
            ("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "x"}),
        ]:
            theirs = await gw.rpc(method, p, headers={**V1, **bob})
            assert theirs["error"]["code"] == -32001, (method, theirs)
        still = await gw.rpc(
            "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "x"}, headers={**V1, **alice}
        )
        assert still["result"]["id"] == "x"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://[::ffff:169.254.169.254]/",
        "http://0.0.0.0/hook",
        "http://localhost/hook",
        "ftp://example.com/hook",
        "http://user:pw@example.com/hook",
        "not a url",
    ],
)
async def test_private_and_odd_urls_are_refused_by_default(gateway: Gateway, url: str) -> None:
    task_id = await a_task(gateway)
    r = await gateway.rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url})
    assert r["error"]["code"] == -32602, r
    sent = await gateway.client.post(
        "/message:send",
        json={"message": message(), "configuration": {"taskPushNotificationConfig": {"url": url}}},
        headers=V1,
    )
    assert sent.status_code == 400, sent.text
    listed = await gateway.list_tasks()
    assert len(listed["tasks"]) == 1  # the refused send made no task


async def test_private_urls_are_allowed_when_configured(settings: Settings) -> None:
    allowed = GatewayConfig(default_timeout=10, push_allow_private=True)
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=allowed) as gw:
        task_id = await a_task(gw)
        for url in ("http://127.0.0.1:8080/hook", "http://169.254.169.254/latest/"):
            r = await gw.rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url})
            assert r["result"]["url"] == url
        multicast = await gw.rpc(
            "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": "http://224.0.0.1/"}
        )
        assert multicast["error"]["code"] == -32602


async def test_a_receiver_down_for_30_seconds_gets_every_event_once_soon_after(
    settings: Settings, receiver: Receiver
) -> None:
    # The default back-off (1 s doubling), capped at 4 s instead of 60 s: about ten failed
    # attempts while the receiver is down, and the next one at most 4 s after it is back.
    config = dataclasses.replace(LOOPBACK, push_backoff=1.0, push_backoff_max=4.0)
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=config) as gw:
        push = {"taskPushNotificationConfig": push_config(receiver.url, token="tok-1")}
        task = await gw.send(message(text="to push"), agent="echo", configuration=push)
        task_id = task["id"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        await anyio.sleep(30)  # the receiver is down: every attempt fails
        assert not receiver.got
        async with receiver.up():
            back = anyio.current_time()
            events = await receiver.wait_final(task_id)
            waited = anyio.current_time() - back
        check_delivered(receiver, events, task_id)
        # The cap, the sender's 1 s look at the queue, and wait_final's 0.5 s for stragglers.
        assert waited < config.push_backoff_max + 2.5, waited


async def test_deliveries_survive_a_gateway_restart(settings: Settings, receiver: Receiver) -> None:
    async with runtime_serving(settings, *AGENTS) as runtime:
        async with gateway_on(runtime, config=LOOPBACK) as gw:
            task = await gw.send(message(text="hi"), agent="echo")
            task_id = task["id"]
            r = await gw.rpc(
                "CreateTaskPushNotificationConfig", {"taskId": task_id, **push_config(receiver.url)}
            )
            assert "result" in r, r
            # A config created on a finished task is told nothing; one on a new task, everything.
            config = {"taskPushNotificationConfig": push_config(receiver.url, token="tok-1")}
            task = await gw.send(message(text="to push"), agent="echo", configuration=config)
            task_id = task["id"]
            await anyio.sleep(1)  # a few failed attempts
        async with receiver.up(), gateway_on(runtime, config=LOOPBACK):
            events = await receiver.wait_final(task_id)
        check_delivered(receiver, events, task_id)


async def test_the_same_message_again_attaches_its_push_config_once(settings: Settings) -> None:
    s = msgspec.structs.replace(settings, tasks=True)
    async with runtime_serving(s, *AGENTS) as runtime, gateway_on(runtime, config=LOOPBACK) as gw:
        sent = message(text="hello")
        hook = {"url": "http://127.0.0.1:9/hook", "token": "t"}
        first = await gw.send(sent, agent="echo", configuration={"taskPushNotificationConfig": hook})
        again = await gw.send(sent, agent="echo", configuration={"taskPushNotificationConfig": hook})
        listed = await gw.rpc("ListTaskPushNotificationConfigs", {"taskId": first["id"]}, agent="echo")
        other = await gw.send(
            message(text="hello"), agent="echo", configuration={"taskPushNotificationConfig": hook}
        )
        theirs = await gw.rpc("ListTaskPushNotificationConfigs", {"taskId": other["id"]}, agent="echo")
    assert again["id"] == first["id"] and other["id"] != first["id"]
    assert len(listed["result"]["configs"]) == 1, listed
    assert len(theirs["result"]["configs"]) == 1, theirs
