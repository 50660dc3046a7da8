"""What a request may say and how: an action's arguments, list paging, the version, content types."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Gateway, message

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
