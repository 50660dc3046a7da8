"""What a request may say and how: an action's arguments, list paging, the version, content types."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import V1, Gateway, message, rpc_body

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def said(task: dict[str, Any]) -> Any:
    """The one part of a completed echo task's result."""
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    (part,) = task["artifacts"][0]["parts"]
    return part


# -- an action's arguments ---------------------------------------------------------------


async def test_an_action_part_may_name_its_arguments_parameters(gateway: Gateway) -> None:
    part = {"data": {"action": "say", "parameters": {"text": "as the bus says it"}}}
    assert said(await gateway.send(message(part), agent="echo")) == {"text": "as the bus says it"}
    on_the_gateway = {"data": {"action": "say", "agent": "echo", "parameters": {"text": "routed"}}}
    assert said(await gateway.send(message(on_the_gateway))) == {"text": "routed"}


async def test_params_and_parameters_may_both_be_given_only_if_equal(gateway: Gateway) -> None:
    same = {"data": {"action": "say", "params": {"text": "once"}, "parameters": {"text": "once"}}}
    assert said(await gateway.send(message(same), agent="echo")) == {"text": "once"}
    differ = {"data": {"action": "say", "params": {"text": "a"}, "parameters": {"text": "b"}}}
    body = await gateway.rpc("SendMessage", {"message": message(differ)}, agent="echo")
    error = body["error"]
    assert error["code"] == -32602
    assert "'params'" in error["message"] and "'parameters'" in error["message"]
    listed = await gateway.list_tasks()
    assert listed["totalSize"] == 1  # the refused message made no task


async def test_parameters_that_are_not_an_object_are_refused_by_name(gateway: Gateway) -> None:
    part = {"data": {"action": "say", "parameters": ["text"]}}
    body = await gateway.rpc("SendMessage", {"message": message(part)}, agent="echo")
    assert body["error"]["code"] == -32602 and "'parameters'" in body["error"]["message"]


# -- list paging -------------------------------------------------------------------------


async def test_a_page_size_of_zero_is_refused_and_says_why(gateway: Gateway) -> None:
    body = await gateway.rpc("ListTasks", {"pageSize": 0})
    error = body["error"]
    assert error["code"] == -32602 and "pageSize" in error["message"] and "got 0" in error["message"]
    (violations,) = [d["fieldViolations"] for d in error["data"] if "fieldViolations" in d]
    assert [v["field"] for v in violations] == ["pageSize"]
    r = await gateway.client.get("/tasks", params={"pageSize": "0"}, headers=V1)
    assert r.status_code == 400 and r.json()["error"]["details"][0]["reason"] == "INVALID_PARAMS"
    assert "pageSize" in r.json()["error"]["message"]
    assert (await gateway.rpc("ListTasks", {}))["result"]["pageSize"] == 50
    assert (await gateway.list_tasks(pageSize=1))["pageSize"] == 1


# -- where the version is given ----------------------------------------------------------


async def test_the_version_may_be_a_query_parameter(gateway: Gateway) -> None:
    version = {"A2A-Version": "1.0"}
    r = await gateway.client.post("/agents/echo/message:send", params=version, json={"message": message()})
    assert r.status_code == 200, r.text
    assert said(r.json()["task"]) == {"text": "hi"}
    r = await gateway.client.get("/tasks", params={"a2a-version": "1.0"})  # names are case-insensitive
    assert r.status_code == 200 and r.json()["totalSize"] == 1, r.text
    body = rpc_body("SendMessage", {"message": message(text="by rpc")})
    r = await gateway.client.post("/agents/echo", params=version, json=body)
    assert said(r.json()["result"]["task"]) == {"text": "by rpc"}
    # A 0.3 method told 1.0 in the query is told its version does not fit (0.3 has no -32009).
    legacy = rpc_body("tasks/get", {"id": r.json()["result"]["task"]["id"]})
    r = await gateway.client.post("/", params=version, json=legacy)
    assert r.json()["error"]["code"] == -32603 and "version" in r.json()["error"]["message"].lower()


async def test_the_header_wins_over_the_query_parameter_unless_empty(gateway: Gateway) -> None:
    r = await gateway.client.get("/tasks", params={"A2A-Version": "1.0"}, headers={"A2A-Version": ""})
    assert r.status_code == 200, r.text
    r = await gateway.client.get("/tasks", params={"A2A-Version": "2.0"}, headers=V1)
    assert r.status_code == 200, r.text
    r = await gateway.client.get("/tasks", params={"A2A-Version": "1.0"}, headers={"A2A-Version": "2.0"})
    assert r.status_code == 400 and r.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    body = rpc_body("ListTasks", {})
    r = await gateway.client.post(
        "/", params={"A2A-Version": "1.0"}, json=body, headers={"A2A-Version": "0.3"}
    )
    assert r.json()["error"]["code"] == -32009


# -- content types -----------------------------------------------------------------------

FILE_PARTS = [
    {"url": "https://example.com/report.pdf", "mediaType": "application/pdf"},
    {"raw": "aGVsbG8=", "filename": "hello.txt", "mediaType": "text/plain"},
]


@pytest.mark.parametrize("file", FILE_PARTS, ids=["url", "raw"])
async def test_a_file_part_is_a_content_type_not_supported(gateway: Gateway, file: dict[str, Any]) -> None:
    for parts in (
        [file],
        [{"text": "see the file"}, file],
        [{"data": {"action": "say", "params": {}}}, file],
    ):
        body = await gateway.rpc("SendMessage", {"message": message(*parts)}, agent="echo")
        assert body["error"]["code"] == -32005, body
        assert body["error"]["data"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
        r = await gateway.client.post(
            "/agents/echo/message:send", json={"message": message(*parts)}, headers=V1
        )
        assert (
            r.status_code == 400 and r.json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
        )
    assert (await gateway.list_tasks())["totalSize"] == 0


async def test_a_file_part_in_0_3_is_refused_alike(gateway: Gateway) -> None:
    legacy = {
        "kind": "message",
        "messageId": "m03",
        "role": "user",
        "parts": [{"kind": "file", "file": {"uri": "https://example.com/x.png", "mimeType": "image/png"}}],
    }
    body = await gateway.rpc("message/send", {"message": legacy}, agent="echo", headers={})
    assert body["error"]["code"] == -32005, body
