"""The interop harness against the SDK's own server: the SDK client script talks to the SDK echo agent.

No project code is involved; these tests prove the harness (and document the SDK's
behaviour) before gateway tests reuse it. Every protocol combination is covered:
JSON-RPC and HTTP+JSON bindings, A2A 1.0 and 0.3.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.interop.conftest import SdkOutput, SdkServer

pytestmark = [pytest.mark.integration]

Client = Callable[..., SdkOutput]
Server = Callable[..., SdkServer]

COMBOS = [
    pytest.param(binding, version, id=f"{binding}-{version}")
    for binding in ("jsonrpc", "rest")
    for version in ("1.0", "0.3")
]
COMPLETED = "TASK_STATE_COMPLETED"


def proto(binding: str, version: str) -> tuple[str, ...]:
    return ("--binding", binding, "--version", version)


@pytest.fixture(scope="module")
def echo(sdk_echo_server: Server) -> SdkServer:
    """An instant echo agent that reports the A2A-Version and X-Api-Key headers it received."""
    return sdk_echo_server(echo_headers=["A2A-Version", "X-Api-Key"])


@pytest.fixture(scope="module")
def cancel_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("interop") / "cancel.log"


@pytest.fixture(scope="module")
def slow(sdk_echo_server: Server, cancel_log: Path) -> SdkServer:
    """An echo agent that works 5 s in 0.1 s steps and logs the cancels it receives."""
    return sdk_echo_server(delay=5, cancel_log=cancel_log)


@pytest.mark.parametrize(("binding", "version"), COMBOS)
def test_send_text_and_data_arrive_intact(sdk_client: Client, echo: str, binding: str, version: str) -> None:
    data = {"query": "café ☕", "n": 3, "nested": {"list": [1, "two", None, True]}}
    out = sdk_client(
        "--url", echo, *proto(binding, version),
        "--header", "X-Api-Key: secret-1",
        "--metadata", '{"trace": "abc"}', "--skill", "echo",
        "--data", '{"query": "café ☕", "n": 3, "nested": {"list": [1, "two", null, true]}}',
        "send", "hello, world",
    ).ok()  # fmt: skip
    task = out.last("task", op="send")
    assert task["status"]["state"] == COMPLETED
    [artifact] = task["artifacts"]
    assert artifact["parts"] == [{"text": "hello, world"}, {"data": data}]
    meta = artifact["metadata"]
    assert meta["messageMetadata"] == {"trace": "abc", "skillId": "echo"}
    assert meta["headers"] == {"A2A-Version": version, "X-Api-Key": "secret-1"}


@pytest.mark.parametrize(("binding", "version"), COMBOS)
def test_send_data_only(sdk_client: Client, echo: str, binding: str, version: str) -> None:
    out = sdk_client("--url", echo, *proto(binding, version), "send-data", '{"x": [1.5, "y"]}').ok()
    assert out.last("task")["artifacts"][0]["parts"] == [{"data": {"x": [1.5, "y"]}}]


@pytest.mark.parametrize(("binding", "version"), COMBOS)
def test_stream_reports_each_step(
    sdk_client: Client, sdk_echo_server: Server, binding: str, version: str
) -> None:
    url = sdk_echo_server(delay=0.3)
    out = sdk_client("--url", url, *proto(binding, version), "stream", "streamed").ok()
    assert [line["op"] for line in out] == ["stream"] * len(out)
    assert out[0]["event"] == "task" and out[0]["status"]["state"] == "TASK_STATE_SUBMITTED"
    steps = [e["metadata"]["step"] for e in out.events("status-update") if "metadata" in e]
    assert steps == [1, 2, 3]
    assert out.last("artifact-update")["artifact"]["parts"] == [{"text": "streamed"}]
    assert out[-1]["event"] == "status-update" and out[-1]["status"]["state"] == COMPLETED


@pytest.mark.parametrize(("binding", "version"), COMBOS)
def test_get_task_by_id_from_a_new_client(sdk_client: Client, echo: str, binding: str, version: str) -> None:
    sent = sdk_client("--url", echo, *proto(binding, version), "send", "remember me").ok().last("task")
    got = sdk_client("--url", echo, *proto(binding, version), "get", sent["id"]).ok().last("task", op="get")
    assert got["id"] == sent["id"] and got["contextId"] == sent["contextId"]
    assert got["status"]["state"] == COMPLETED
    assert got["artifacts"][0]["parts"] == [{"text": "remember me"}]


@pytest.mark.parametrize(("binding", "version"), COMBOS)
def test_cancel_reaches_the_executor(
    sdk_client: Client, slow: str, cancel_log: Path, binding: str, version: str
) -> None:
    out = sdk_client("--url", slow, *proto(binding, version), "send-then-cancel", "slow", "--after", "0.3")
    out.ok()
    task_id = out.last("task", op="cancel")["id"]
    assert out.last("task", op="cancel")["status"]["state"] == "TASK_STATE_CANCELED"
    assert out.last("task", op="get")["status"]["state"] == "TASK_STATE_CANCELED"
    assert out.events("status-update", op="stream"), "the task was streaming before the cancel"
    assert f"cancel {task_id}" in cancel_log.read_text().splitlines()


def test_cancel_after_a_non_blocking_send(sdk_client: Client, slow: str, cancel_log: Path) -> None:
    out = sdk_client("--url", slow, "send-then-cancel", "slow", "--after", "0.2", "--no-stream").ok()
    assert [(line["op"], line["status"]["state"]) for line in out] == [
        ("send", "TASK_STATE_SUBMITTED"),
        ("cancel", "TASK_STATE_CANCELED"),
        ("get", "TASK_STATE_CANCELED"),
    ]
    assert f"cancel {out[0]['id']}" in cancel_log.read_text().splitlines()


def test_failing_agent_fails_the_task(sdk_client: Client, sdk_echo_server: Server) -> None:
    url = sdk_echo_server(fail="the backend is down")
    task = sdk_client("--url", url, "send", "x").ok().last("task")
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"] == [{"text": "the backend is down"}]


@pytest.mark.parametrize(("binding", "version"), COMBOS)
def test_unknown_task_is_an_error(sdk_client: Client, echo: str, binding: str, version: str) -> None:
    out = sdk_client("--url", echo, *proto(binding, version), "get", "no-such-task")
    assert out.returncode == 1 and out.error is not None
    if (binding, version) == ("rest", "0.3"):
        # The SDK's 0.3 REST client turns every 404 into MethodNotFoundError.
        assert out.error["type"] == "MethodNotFoundError" and out.error["httpStatus"] == 404
    else:
        assert out.error["type"] == "TaskNotFoundError" and out.error["code"] == -32001


def test_cancelling_a_finished_task_is_an_error(sdk_client: Client, echo: str) -> None:
    task = sdk_client("--url", echo, "send", "done").ok().last("task")
    out = sdk_client("--url", echo, "cancel", task["id"])
    assert out.returncode == 1
    assert out.error == {
        "type": "TaskNotCancelableError",
        "code": -32002,
        "message": "Task cannot be canceled",
        "httpStatus": None,
        "data": None,
    }


def test_required_header(sdk_client: Client, sdk_echo_server: Server) -> None:
    url = sdk_echo_server(require_header="Authorization: Bearer t0k3n", bindings=["rest"])
    card = sdk_client("--url", url, "card").ok().last("card")  # the card stays public
    assert card["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "bearer"}}}
    denied = sdk_client("--url", url, "--binding", "rest", "send", "x")
    assert denied.returncode == 1 and denied.error and denied.error["httpStatus"] == 401
    token = ("--header", "Authorization: Bearer t0k3n")
    allowed = sdk_client("--url", url, "--binding", "rest", *token, "send", "x")
    assert allowed.ok().last("task")["status"]["state"] == COMPLETED


def test_card_and_interface_choice(sdk_client: Client, sdk_echo_server: Server) -> None:
    url = sdk_echo_server(skills=["echo", "shout"], streaming=False, name="carded")
    out = sdk_client("--card-url", f"{url}/.well-known/agent-card.json", "--binding", "rest", "card").ok()
    card = out.last("card")
    assert card["name"] == "carded"
    assert [s["id"] for s in card["skills"]] == ["echo", "shout"]
    assert card["capabilities"].get("streaming", False) is False
    assert {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]} == {
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
        ("JSONRPC", "0.3"),
        ("HTTP+JSON", "0.3"),
    }
    # Without --version the SDK picks 1.0; the 0.3 view of the card is merged into the same JSON.
    assert out.last("interface") == {
        "op": "card",
        "event": "interface",
        "url": url,
        "protocolBinding": "HTTP+JSON",
        "protocolVersion": "1.0",
    }
    # Streaming is off on the card, so "stream" falls back to one blocking send.
    streamed = sdk_client("--url", url, "stream", "x").ok()
    assert [line["event"] for line in streamed] == ["task"]


def test_missing_version_is_a_client_error(sdk_client: Client, sdk_echo_server: Server) -> None:
    url = sdk_echo_server(versions=["1.0"])
    out = sdk_client("--url", url, "--version", "0.3", "send", "x")
    assert out.returncode == 1 and out.error and out.error["type"] == "NoCompatibleInterfaceError"
