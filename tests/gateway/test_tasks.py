"""Tasks as a client keeps track of them: listing and paging, filters, owners, history, polling."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from a2a import Settings
from a2a.gateway import Authenticator, GatewayConfig
from a2a.gateway.tasks import TaskStore
from transports.a2a_http import TaskStatus

from .conftest import AGENTS, V1, Gateway, action, gateway_on, message, runtime_serving

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

COMPLETED = "TASK_STATE_COMPLETED"


async def quick_tasks(gw: Gateway, contexts: list[str], **headers: str) -> list[dict[str, Any]]:
    """One completed echo task per context id, a few milliseconds apart (so their order is known)."""
    tasks = []
    for context in contexts:
        tasks.append(await gw.send(message(text=context, contextId=context), agent="echo", headers=headers))
        await anyio.sleep(0.005)
    return tasks


async def all_pages(gw: Gateway, **query: Any) -> list[dict[str, Any]]:
    """Every page of a listing, following nextPageToken."""
    pages, token = [], ""
    for _ in range(20):
        params: dict[str, Any] = {**query, "pageToken": token} if token else query
        page = await gw.list_tasks(**params)
        pages.append(page)
        token = page["nextPageToken"]
        if not token:
            return pages
    raise AssertionError("the listing does not end")


async def test_list_tasks_pages_through_every_task(gateway: Gateway) -> None:
    created = await quick_tasks(gateway, [f"c{i}" for i in range(7)])
    pages = await all_pages(gateway, pageSize=3)
    assert [len(p["tasks"]) for p in pages] == [3, 3, 1]
    assert all(p["totalSize"] == 7 and p["pageSize"] == 3 for p in pages)
    assert pages[0]["nextPageToken"] and pages[1]["nextPageToken"]
    assert pages[2]["nextPageToken"] == ""
    listed = [t["id"] for p in pages for t in p["tasks"]]
    assert listed == [t["id"] for t in reversed(created)]  # newest first, each once


async def test_list_tasks_over_jsonrpc(gateway: Gateway) -> None:
    await quick_tasks(gateway, ["a", "b"])
    body = await gateway.rpc("ListTasks", {"pageSize": 1})
    result = body["result"]
    assert len(result["tasks"]) == 1 and result["totalSize"] == 2 and result["nextPageToken"]
    body = await gateway.rpc("ListTasks", {"pageSize": 1, "pageToken": result["nextPageToken"]})
    assert len(body["result"]["tasks"]) == 1 and body["result"]["nextPageToken"] == ""


async def test_list_tasks_filters_by_context_and_state(gateway: Gateway) -> None:
    await quick_tasks(gateway, ["ctx-a", "ctx-b", "ctx-a", "ctx-a"])
    refused = await gateway.send(message(action("refuse"), contextId="ctx-b"), agent="slow")
    assert refused["status"]["state"] == "TASK_STATE_REJECTED"
    in_a = (await gateway.list_tasks(contextId="ctx-a"))["tasks"]
    assert len(in_a) == 3 and {t["contextId"] for t in in_a} == {"ctx-a"}
    rejected = (await gateway.list_tasks(status="TASK_STATE_REJECTED"))["tasks"]
    assert [t["id"] for t in rejected] == [refused["id"]]
    both = (await gateway.list_tasks(contextId="ctx-b", status=COMPLETED))["tasks"]
    assert len(both) == 1 and both[0]["contextId"] == "ctx-b"
    assert (await gateway.list_tasks(contextId="ctx-none"))["tasks"] == []


async def test_filtered_pages_skip_no_task(gateway: Gateway) -> None:
    # Newest first the tasks are a, b, a, a, a: the first page of "a" fills inside the second chunk.
    created = await quick_tasks(gateway, ["a", "a", "a", "b", "a"])
    pages = await all_pages(gateway, pageSize=3, contextId="a")
    listed = [t["id"] for p in pages for t in p["tasks"]]
    assert sorted(listed) == sorted(t["id"] for t in created if t["contextId"] == "a")


async def test_total_size_counts_the_tasks_that_match(gateway: Gateway) -> None:
    await quick_tasks(gateway, ["a", "b", "b"])
    assert (await gateway.list_tasks(contextId="a"))["totalSize"] == 1


async def test_list_tasks_since_a_time(gateway: Gateway) -> None:
    await quick_tasks(gateway, ["before"])
    await anyio.sleep(0.05)
    (second,) = await quick_tasks(gateway, ["after"])
    listed = (await gateway.list_tasks(statusTimestampAfter=second["status"]["timestamp"]))["tasks"]
    assert [t["id"] for t in listed] == [second["id"]]


async def test_listing_leaves_out_artifacts_unless_asked(gateway: Gateway) -> None:
    await quick_tasks(gateway, ["x"])
    (plain,) = (await gateway.list_tasks())["tasks"]
    assert "artifacts" not in plain
    (full,) = (await gateway.list_tasks(includeArtifacts="true"))["tasks"]
    assert full["artifacts"][0]["parts"] == [{"text": "x"}]


async def test_history_length(gateway: Gateway) -> None:
    sent = await gateway.send(message(text="remember me"), agent="echo", configuration={"historyLength": 0})
    assert "history" not in sent
    task_id = sent["id"]
    assert "history" not in await gateway.task(task_id, historyLength=0)
    (last,) = (await gateway.task(task_id, historyLength=1))["history"]
    assert last["role"] == "ROLE_USER" and last["parts"] == [{"text": "remember me"}]
    assert len((await gateway.task(task_id))["history"]) == 1
    body = await gateway.rpc("GetTask", {"id": task_id, "historyLength": 0})
    assert "history" not in body["result"]
    (listed,) = (await gateway.list_tasks(historyLength=0))["tasks"]
    assert "history" not in listed
    # In 0.3 a historyLength of 0 means "all of it".
    legacy = await gateway.rpc("tasks/get", {"id": task_id, "historyLength": 0}, headers={})
    assert len(legacy["result"]["history"]) == 1


async def test_return_immediately_then_poll(gateway: Gateway) -> None:
    started = time.monotonic()
    task = await gateway.send(
        message(action("wait", seconds=0.3)), agent="slow", configuration={"returnImmediately": True}
    )
    assert time.monotonic() - started < 0.25
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert "artifacts" not in task
    done = await gateway.wait_state(task["id"], timeout=5)
    assert done["status"]["state"] == COMPLETED
    assert done["artifacts"][0]["parts"] == [{"text": "waited"}]


async def test_a_finished_task_takes_no_more_messages_and_no_cancel(gateway: Gateway) -> None:
    (task,) = await quick_tasks(gateway, ["done"])
    again = await gateway.rpc("SendMessage", {"message": message(taskId=task["id"])}, agent="echo")
    assert again["error"]["code"] == -32004
    cancel = await gateway.client.post(f"/tasks/{task['id']}:cancel", headers=V1)
    assert (
        cancel.status_code == 400 and cancel.json()["error"]["details"][0]["reason"] == "TASK_NOT_CANCELABLE"
    )
    subscribe = await gateway.rpc("SubscribeToTask", {"id": task["id"]})
    assert subscribe["error"]["code"] == -32004
    assert (await gateway.task(task["id"]))["status"]["state"] == COMPLETED


async def test_cancel_a_running_task_on_its_own_gateway(gateway: Gateway) -> None:
    task = await gateway.send(
        message(action("wait", seconds=30)), agent="slow", configuration={"returnImmediately": True}
    )
    await gateway.wait_state(task["id"], ["TASK_STATE_WORKING"])
    with anyio.fail_after(5):
        body = await gateway.rpc("CancelTask", {"id": task["id"]})
    assert body["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert (await gateway.task(task["id"]))["status"]["state"] == "TASK_STATE_CANCELED"


# -- owners ----------------------------------------------------------------------------

ALICE = {"X-API-Key": "key-of-alice"}
BOB = {"X-API-Key": "key-of-bob"}


@pytest.fixture
async def keyed(settings: Settings, tmp_path: Path) -> AsyncIterator[Gateway]:
    keys = tmp_path / "keys.yaml"
    keys.write_text("alice: key-of-alice\nbob: [key-of-bob, second-key-of-bob]\n")
    auth = Authenticator.from_files(keys)
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, auth=auth) as gw:
        yield gw


async def test_tasks_of_another_user_do_not_exist_for_you(keyed: Gateway) -> None:
    gw = keyed
    mine = await gw.send(message(text="alice's", contextId="shared-name"), agent="echo", headers=ALICE)
    running = await gw.send(
        message(action("wait", seconds=30)),
        agent="slow",
        headers=ALICE,
        configuration={"returnImmediately": True},
    )
    bobs = await gw.send(message(text="bob's"), agent="echo", headers=BOB)
    for task_id in (mine["id"], running["id"]):
        r = await gw.get_task(task_id, headers=BOB)
        assert r.status_code == 404 and r.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
        r = await gw.client.post(f"/tasks/{task_id}:cancel", headers={**V1, **BOB})
        assert r.status_code == 404
        r = await gw.client.post(f"/tasks/{task_id}:subscribe", headers={**V1, **BOB})
        assert r.status_code == 404
        body = await gw.rpc("GetTask", {"id": task_id}, headers={**V1, **BOB})
        assert body["error"]["code"] == -32001
        follow_up = await gw.rpc(
            "SendMessage", {"message": message(taskId=task_id)}, agent="echo", headers={**V1, **BOB}
        )
        assert follow_up["error"]["code"] == -32001
    listing = await gw.list_tasks(headers=BOB)
    assert [t["id"] for t in listing["tasks"]] == [bobs["id"]] and listing["totalSize"] == 1
    assert (await gw.list_tasks(headers=BOB, contextId="shared-name"))["tasks"] == []
    # Bob's other key is still Bob.
    assert (await gw.list_tasks(headers={"X-API-Key": "second-key-of-bob"}))["totalSize"] == 1
    alice_sees = {t["id"] for t in (await gw.list_tasks(headers=ALICE))["tasks"]}
    assert alice_sees == {mine["id"], running["id"]}
    # Bob's cancel left Alice's call running.
    assert (await gw.task(running["id"], headers=ALICE))["status"]["state"] == "TASK_STATE_WORKING"


async def test_no_key_or_a_wrong_key_is_401_everywhere(keyed: Gateway) -> None:
    gw = keyed
    task = await gw.send(message(), agent="echo", headers=ALICE)
    for headers in ({}, {"X-API-Key": "guess"}, {"X-API-Key": ""}, {"Authorization": "Bearer x.y.z"}):
        for method, path in (
            ("POST", "/agents/echo/message:send"),
            ("GET", f"/tasks/{task['id']}"),
            ("GET", "/tasks"),
            ("POST", "/agents/echo"),
            ("POST", "/"),
        ):
            r = await gw.client.request(method, path, json={"message": message()}, headers={**V1, **headers})
            assert r.status_code == 401, (headers, path, r.text)
            assert r.json()["error"]["status"] == "UNAUTHENTICATED"
            assert "X-API-Key" in r.headers["www-authenticate"]
    # Cards stay public.
    assert (await gw.client.get("/.well-known/agent-card.json")).status_code == 200


async def test_a_context_id_one_user_chose_is_still_free_for_another(keyed: Gateway) -> None:
    bobs = await keyed.send(message(action("whoami"), contextId="standup"), agent="slow", headers=BOB)
    assert bobs["status"]["state"] == COMPLETED
    alices = await keyed.send(message(action("whoami"), contextId="standup"), agent="slow", headers=ALICE)
    assert alices["status"]["state"] == COMPLETED, alices["status"]
    assert alices["artifacts"][0]["parts"][0]["data"]["user"] == "alice"


async def test_a_user_named_anonymous_is_a_user_or_refused(settings: Settings, tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    keys.write_text("anonymous: key-of-nobody\n")
    try:
        auth = Authenticator.from_files(keys)
    except ValueError:
        return  # refusing the name is a fine answer too
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, auth=auth) as gw:
        task = await gw.send(message(action("whoami")), agent="slow", headers={"X-API-Key": "key-of-nobody"})
    assert task["artifacts"][0]["parts"][0]["data"]["user"] == "anonymous"


async def test_a_user_may_run_only_so_many_tasks_at_once(settings: Settings) -> None:
    config = GatewayConfig(default_timeout=10, max_running_per_user=1)
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime, config=config) as gw:
        first = await gw.send(
            message(action("wait", seconds=5)), agent="slow", configuration={"returnImmediately": True}
        )
        body = await gw.rpc("SendMessage", {"message": message(action("wait", seconds=5))}, agent="slow")
        assert body["error"]["code"] == -32004, body
        assert "running" in body["error"]["message"]
        await gw.rpc("CancelTask", {"id": first["id"]}, agent="slow")
        await gw.wait_state(first["id"], ["TASK_STATE_CANCELED"])
        again = await gw.send(message(text="now there is room"), agent="echo")
        assert again["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_task_left_working_past_its_deadline_is_failed_when_read(gateway: Gateway) -> None:
    done = await gateway.send(message(text="x"), agent="echo")
    store = TaskStore(gateway.runtime.registry.redis, gateway.runtime.settings.namespace)  # type: ignore[union-attr]
    stored = await store.load(done["id"])
    assert stored is not None
    # As if the final write had been lost: WORKING, written long ago, by this very replica.
    stored.task.status = TaskStatus(state="TASK_STATE_WORKING")
    await store.save(stored)
    await gateway.runtime.registry.redis.set(  # type: ignore[union-attr]
        f"a2a:{{{gateway.runtime.settings.namespace}}}:task:{done['id']}",
        msgspec.json.encode(msgspec.structs.replace(stored, updated=int(time.time() * 1000) - 3_600_000)),
    )
    task = await gateway.task(done["id"])
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "deadline" in task["status"]["message"]["parts"][0]["text"]


# -- an agent's endpoint -----------------------------------------------------------------


def ids(listing: dict[str, Any]) -> set[str]:
    return {t["id"] for t in listing["tasks"]}


async def test_an_agents_endpoint_sees_only_the_tasks_sent_to_that_agent(keyed: Gateway) -> None:
    gw = keyed
    echoed = await gw.send(message(text="direct"), agent="echo", headers=ALICE)
    routed_part = {"data": {"action": "say", "agent": "echo", "params": {"text": "routed"}}}
    routed = await gw.send(message(routed_part), headers=ALICE)  # the gateway's endpoint, to echo
    waiting = await gw.send(
        message(action("wait", seconds=30)),
        agent="slow",
        headers=ALICE,
        configuration={"returnImmediately": True},
    )
    bobs = await gw.send(message(text="bob's"), agent="echo", headers=BOB)
    r = await gw.client.get("/agents/echo/tasks", headers={**V1, **ALICE})
    assert ids(r.json()) == {echoed["id"], routed["id"]} and r.json()["totalSize"] == 2
    body = await gw.rpc("ListTasks", {}, agent="echo", headers={**V1, **ALICE})
    assert ids(body["result"]) == {echoed["id"], routed["id"]}
    r = await gw.client.get("/agents/slow/tasks", headers={**V1, **ALICE})
    assert ids(r.json()) == {waiting["id"]}
    assert ids(await gw.list_tasks(headers=ALICE)) == {echoed["id"], routed["id"], waiting["id"]}
    r = await gw.client.get("/agents/echo/tasks", headers={**V1, **BOB})
    assert ids(r.json()) == {bobs["id"]}
    for path in ("/agents/echo/tasks/" + waiting["id"], "/agents/slow/tasks/" + echoed["id"]):
        r = await gw.client.get(path, headers={**V1, **ALICE})
        assert r.status_code == 404 and r.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    body = await gw.rpc("GetTask", {"id": waiting["id"]}, agent="echo", headers={**V1, **ALICE})
    assert body["error"]["code"] == -32001
    legacy = await gw.rpc("tasks/get", {"id": waiting["id"]}, agent="echo", headers=ALICE)
    assert legacy["error"]["code"] == -32001
    r = await gw.client.get(f"/agents/echo/tasks/{echoed['id']}", headers={**V1, **BOB})
    assert r.status_code == 404  # users stay apart on an agent's endpoint too
    r = await gw.client.get(f"/agents/slow/tasks/{waiting['id']}", headers={**V1, **ALICE})
    assert r.status_code == 200 and r.json()["id"] == waiting["id"]
    assert (await gw.task(waiting["id"], headers=ALICE))["id"] == waiting["id"]
    await gw.rpc("CancelTask", {"id": waiting["id"]}, agent="slow", headers={**V1, **ALICE})


async def test_another_agents_task_cannot_be_cancelled_followed_or_continued(gateway: Gateway) -> None:
    task = await gateway.send(
        message(action("wait", seconds=30)), agent="slow", configuration={"returnImmediately": True}
    )
    await gateway.wait_state(task["id"], ["TASK_STATE_WORKING"])
    for suffix in (":cancel", ":subscribe"):
        r = await gateway.client.post(f"/agents/echo/tasks/{task['id']}{suffix}", headers=V1)
        assert r.status_code == 404 and r.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    for method in ("CancelTask", "SubscribeToTask"):
        body = await gateway.rpc(method, {"id": task["id"]}, agent="echo")
        assert body["error"]["code"] == -32001, body
    follow_up = await gateway.rpc("SendMessage", {"message": message(taskId=task["id"])}, agent="echo")
    assert follow_up["error"]["code"] == -32001
    assert (await gateway.task(task["id"]))["status"]["state"] == "TASK_STATE_WORKING"
    body = await gateway.rpc("CancelTask", {"id": task["id"]}, agent="slow")
    assert body["result"]["status"]["state"] == "TASK_STATE_CANCELED"
