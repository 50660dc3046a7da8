"""A hostile client: every malformed request gets a typed A2A error, at once, and the gateway goes on.

One gateway serves the whole module (the requests here change nothing another case
could see). JSON-RPC errors are HTTP 200 with the code in the body; REST errors carry
the HTTP status and the ``reason`` of their ErrorInfo.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from a2a import Settings

from .conftest import (
    AGENTS,
    ERROR_INFO,
    TERMINAL,
    V1,
    Gateway,
    gateway_on,
    message,
    rpc_body,
    runtime_serving,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MIB = 1 << 20
RPC_CODES = {-32700, -32600, -32601, -32602, -32603, *range(-32009, -32000)}
REASONS = {
    "TASK_NOT_FOUND",
    "TASK_NOT_CANCELABLE",
    "PUSH_NOTIFICATION_NOT_SUPPORTED",
    "UNSUPPORTED_OPERATION",
    "CONTENT_TYPE_NOT_SUPPORTED",
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    "VERSION_NOT_SUPPORTED",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(nats_url: str, redis_url: str) -> AsyncIterator[Gateway]:
    settings = Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace="t" + uuid.uuid4().hex[:10],
        heartbeat_interval=0.25,
        default_timeout=10.0,
    )
    async with runtime_serving(settings, *AGENTS) as runtime, gateway_on(runtime) as gateway:
        yield gateway


def send_params(msg: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"message": msg or message(), **extra}


def with_meta(**metadata: Any) -> dict[str, Any]:
    return send_params(message(metadata=metadata))


def raw_send(fragment: bytes) -> bytes:
    """A JSON-RPC SendMessage whose single data part is ``fragment``, spliced in unparsed."""
    return (
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
        b'{"messageId":"m","role":"ROLE_USER","parts":[{"data":' + fragment + b"}]}}}"
    )


def deep(levels: int, opener: bytes, closer: bytes) -> bytes:
    """``levels`` nested containers: arrays (``[`` ... ``]``) or objects (``{"a":`` ... 1 ... ``}``)."""
    inner = b"1" if opener.startswith(b"{") else b""
    return opener * levels + inner + closer * levels


def check_rpc_error(r: httpx.Response, code: int, request_id: Any) -> dict[str, Any]:
    """A well-formed JSON-RPC error response with ``code``, echoing ``request_id``."""
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert "Traceback" not in r.text
    body = r.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == request_id
    assert "result" not in body
    error = body["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    return dict(error)


def check_rest_error(r: httpx.Response, status: int, reason: str) -> dict[str, Any]:
    """A well-formed REST error: the HTTP status, and the ErrorInfo reason in the body."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert "Traceback" not in r.text
    error = r.json()["error"]
    assert error["code"] == status
    assert isinstance(error["message"], str) and error["message"]
    info = error["details"][0]
    assert info["@type"] == ERROR_INFO
    assert info["reason"] == reason, error
    return dict(error)


LEGACY_MESSAGE = {
    "kind": "message",
    "messageId": "x",
    "role": "user",
    "parts": [{"kind": "text", "text": "hi"}],
}
NO_VERSION: dict[str, str] = {}


def rpc(method: str, params: Any, request_id: Any = 1) -> bytes:
    return json.dumps(rpc_body(method, params, request_id)).encode()


def send(msg: dict[str, Any] | None = None, **extra: Any) -> bytes:
    return rpc("SendMessage", send_params(msg, **extra))


def meta_send(**metadata: Any) -> bytes:
    return rpc("SendMessage", with_meta(**metadata))


def rpc_case(
    name: str,
    body: bytes,
    code: int,
    request_id: Any = 1,
    *,
    path: str = "/agents/echo",
    headers: dict[str, str] = V1,
    legacy: bool = False,
) -> Any:
    """One refused JSON-RPC call; ``legacy`` ones are answered in the 0.3 shape (``data`` not ErrorInfo)."""
    return pytest.param(path, body, headers, code, request_id, legacy, id=name)


NAN_TIMEOUT = (
    b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
    b'"role":"ROLE_USER","parts":[{"text":"a"}],"metadata":{"timeoutMs":NaN}}}}'
)
HUGE_TIMEOUT = NAN_TIMEOUT.replace(b"NaN", b"1e999")
BIG = message(text="x" * 5_000_000)

RPC_CASES = [
    rpc_case("invalid-json", b"{not json", -32700, None),
    rpc_case("empty-body", b"", -32700, None),
    rpc_case("a-number", b"42", -32600, None),
    rpc_case("batch", json.dumps([rpc_body("SendMessage", send_params())]).encode(), -32600, None),
    rpc_case(
        "jsonrpc-missing", json.dumps({"id": 1, "method": "GetTask", "params": {"id": "x"}}).encode(), -32600
    ),
    rpc_case("jsonrpc-1.0", send().replace(b'"jsonrpc": "2.0"', b'"jsonrpc": "1.0"'), -32600),
    rpc_case("jsonrpc-number", send().replace(b'"jsonrpc": "2.0"', b'"jsonrpc": 2.0'), -32600),
    rpc_case("bool-id", rpc("SendMessage", send_params(), True), -32600, None),
    rpc_case("object-id", rpc("GetTask", {"id": "x"}, {"a": 1}), -32600, None),
    rpc_case("float-id", rpc("GetTask", {"id": "x"}, 1.5), -32600, None),
    rpc_case("method-missing", b'{"jsonrpc":"2.0","id":"q"}', -32600, "q"),
    rpc_case("method-number", b'{"jsonrpc":"2.0","id":"q","method":7}', -32600, "q"),
    rpc_case("unknown-method", rpc("Explode", {}), -32601),
    rpc_case("params-array", rpc("SendMessage", [1, 2]), -32602),
    rpc_case("params-string", rpc("SendMessage", "hi"), -32602),
    rpc_case("params-null", rpc("GetTask", None), -32602),
    rpc_case("no-parts", send(message() | {"parts": []}), -32602),
    rpc_case("part-with-two-contents", send(message({"text": "a", "data": {"b": 1}})), -32602),
    rpc_case("part-with-no-content", send(message({"metadata": {}})), -32602),
    rpc_case("role-junk", send(message(role="ROLE_KING")), -32602),
    rpc_case(
        "message-id-missing", rpc("SendMessage", {"message": {"role": "ROLE_USER", "parts": []}}), -32602
    ),
    rpc_case("message-id-2000-chars", send(message(messageId="m" * 2000)), -32602),
    rpc_case("raw-not-base64", send(message({"raw": "!!!"})), -32602),
    rpc_case("nested-10000-arrays", raw_send(deep(10_000, b"[", b"]")), -32700, None),
    rpc_case("nested-10000-objects", raw_send(deep(10_000, b'{"a":', b"}")), -32700, None),
    rpc_case("body-5-mb", send(BIG), -32600, None),
    rpc_case("context-id-with-spaces", send(message(contextId="my context")), -32602),
    rpc_case("context-id-500-chars", send(message(contextId="c" * 500)), -32602),
    rpc_case("timeout-negative", meta_send(timeoutMs=-1), -32602),
    rpc_case("timeout-zero", meta_send(timeoutMs=0), -32602),
    rpc_case("timeout-string", meta_send(timeoutMs="x"), -32602),
    rpc_case("timeout-bool", meta_send(timeoutMs=True), -32602),
    rpc_case("timeout-in-request-metadata", send(metadata={"timeoutMs": "soon"}), -32602),
    rpc_case("timeout-nan-literal", NAN_TIMEOUT, -32700, None),
    rpc_case("timeout-1e999", HUGE_TIMEOUT, -32700, None),
    rpc_case("task-id-unknown", send(message(taskId="no-such-task")), -32001),
    rpc_case("get-unknown-task", rpc("GetTask", {"id": "no-such-task"}), -32001, path="/"),
    rpc_case("get-task-id-with-spaces", rpc("GetTask", {"id": "a b"}), -32001, path="/"),
    rpc_case("cancel-unknown-task", rpc("CancelTask", {"id": "no-such-task"}), -32001, path="/"),
    rpc_case("subscribe-unknown-task", rpc("SubscribeToTask", {"id": "nope"}), -32001, path="/"),
    rpc_case("history-length-negative", rpc("GetTask", {"id": "x", "historyLength": -1}), -32602, path="/"),
    rpc_case("v1-method-without-version", send(), -32009, headers=NO_VERSION),
    rpc_case("v1-method-with-version-2", send(), -32009, headers={"A2A-Version": "2.0"}),
    rpc_case(
        "v03-method-with-version-1.0", rpc("message/send", {"message": LEGACY_MESSAGE}), -32603, legacy=True
    ),
    rpc_case("v03-tasks-list", rpc("tasks/list", {}), -32601, headers=NO_VERSION),
    rpc_case(
        "v03-bad-message", rpc("message/send", {"message": {}}), -32600, headers=NO_VERSION, legacy=True
    ),
    rpc_case("v03-get-unknown", rpc("tasks/get", {"id": "nope"}), -32001, headers=NO_VERSION, legacy=True),
    rpc_case("list-page-token-junk", rpc("ListTasks", {"pageToken": "!!!"}), -32602, path="/"),
    rpc_case(
        "list-page-token-forged", rpc("ListTasks", {"pageToken": "b2EAAAAAAAAAAAAAAAAA"}), -32602, path="/"
    ),
    rpc_case("list-page-size-1000", rpc("ListTasks", {"pageSize": 1000}), -32602, path="/"),
    rpc_case("list-page-size-negative", rpc("ListTasks", {"pageSize": -1}), -32602, path="/"),
    rpc_case("list-page-size-zero", rpc("ListTasks", {"pageSize": 0}), -32602, path="/"),
    rpc_case("list-status-junk", rpc("ListTasks", {"status": "DONE"}), -32602, path="/"),
    rpc_case("file-part", send(message({"url": "https://example.com/x"})), -32005),
    rpc_case(
        "action-params-not-an-object", send(message({"data": {"action": "say", "params": [1]}})), -32602
    ),
    rpc_case("agent-not-live", send(), -32602, path="/agents/ghost"),
    rpc_case("gateway-text-without-skill", send(), -32602, path="/"),
    rpc_case("gateway-skill-nobody-has", send(metadata={"skillId": "juggling"}), -32602, path="/"),
    rpc_case("gateway-skill-id-junk", send(metadata={"skillId": "a b"}), -32602, path="/"),
    rpc_case(
        "push-config-task-unknown",
        rpc("CreateTaskPushNotificationConfig", {"taskId": "t", "url": "https://x"}),
        -32001,
    ),
    rpc_case("extended-card", rpc("GetExtendedAgentCard", {}), -32007, path="/"),
]


@pytest.mark.parametrize(("path", "body", "headers", "code", "request_id", "legacy"), RPC_CASES)
async def test_jsonrpc_refuses(
    gw: Gateway, path: str, body: bytes, headers: dict[str, str], code: int, request_id: Any, legacy: bool
) -> None:
    with anyio.fail_after(5):
        r = await gw.client.post(path, content=body, headers={"Content-Type": "application/json", **headers})
    error = check_rpc_error(r, code, request_id)
    if legacy:
        assert error.get("data") is None
    else:
        assert error["data"][0]["@type"] == ERROR_INFO
    await gw.healthy()


def rest_case(
    name: str,
    method: str,
    path: str,
    body: bytes | None,
    status: int,
    reason: str,
    headers: dict[str, str] = V1,
) -> Any:
    return pytest.param(method, path, body, headers, status, reason, id=name)


SEND = "/agents/echo/message:send"
BODY = json.dumps(send_params()).encode()


def rest_send(msg: dict[str, Any] | None = None, **extra: Any) -> bytes:
    return json.dumps(send_params(msg, **extra)).encode()


REST_CASES = [
    rest_case("send-without-version", "POST", SEND, BODY, 400, "VERSION_NOT_SUPPORTED", NO_VERSION),
    rest_case("list-without-version", "GET", "/tasks", None, 400, "VERSION_NOT_SUPPORTED", NO_VERSION),
    rest_case("get-without-version", "GET", "/tasks/abc", None, 400, "VERSION_NOT_SUPPORTED", NO_VERSION),
    rest_case(
        "stream-without-version",
        "POST",
        "/agents/echo/message:stream",
        BODY,
        400,
        "VERSION_NOT_SUPPORTED",
        {},
    ),
    rest_case("version-0.3", "GET", "/tasks", None, 400, "VERSION_NOT_SUPPORTED", {"A2A-Version": "0.3"}),
    rest_case("version-2.0", "GET", "/tasks", None, 400, "VERSION_NOT_SUPPORTED", {"A2A-Version": "2.0"}),
    rest_case("version-junk", "GET", "/tasks", None, 400, "VERSION_NOT_SUPPORTED", {"A2A-Version": "one"}),
    rest_case("invalid-json", "POST", SEND, b"{oops", 400, "INVALID_REQUEST"),
    rest_case("json-array", "POST", SEND, b"[]", 400, "INVALID_REQUEST"),
    rest_case("json-string", "POST", SEND, b'"hi"', 400, "INVALID_REQUEST"),
    rest_case(
        "nested-10000", "POST", SEND, b'{"message":' + deep(10_000, b"[", b"]") + b"}", 400, "INVALID_REQUEST"
    ),
    rest_case("body-5-mb", "POST", SEND, rest_send(BIG), 400, "INVALID_REQUEST"),
    rest_case("no-parts", "POST", SEND, rest_send(message() | {"parts": []}), 400, "INVALID_PARAMS"),
    rest_case(
        "context-id-with-spaces", "POST", SEND, rest_send(message(contextId="a b")), 400, "INVALID_PARAMS"
    ),
    rest_case(
        "timeout-negative", "POST", SEND, json.dumps(with_meta(timeoutMs=-1)).encode(), 400, "INVALID_PARAMS"
    ),
    rest_case("task-id-unknown", "POST", SEND, rest_send(message(taskId="zz")), 404, "TASK_NOT_FOUND"),
    rest_case("page-token-junk", "GET", "/tasks?pageToken=%25%25junk", None, 400, "INVALID_PARAMS"),
    rest_case("page-size-1000", "GET", "/tasks?pageSize=1000", None, 400, "INVALID_PARAMS"),
    rest_case("page-size-zero", "GET", "/tasks?pageSize=0", None, 400, "INVALID_PARAMS"),
    rest_case("get-1000-char-id", "GET", "/tasks/" + "t" * 1000, None, 404, "TASK_NOT_FOUND"),
    rest_case("get-unknown", "GET", "/tasks/no-such-task", None, 404, "TASK_NOT_FOUND"),
    rest_case("cancel-unknown", "POST", "/tasks/no-such-task:cancel", None, 404, "TASK_NOT_FOUND"),
    rest_case("subscribe-unknown", "POST", "/tasks/no-such-task:subscribe", None, 404, "TASK_NOT_FOUND"),
    rest_case(
        "subscribe-unknown-get", "GET", "/agents/echo/tasks/nope:subscribe", None, 404, "TASK_NOT_FOUND"
    ),
    rest_case(
        "push-config-task-unknown",
        "POST",
        "/tasks/x/pushNotificationConfigs",
        b'{"url":"https://x"}',
        404,
        "TASK_NOT_FOUND",
    ),
    rest_case("extended-card", "GET", "/extendedAgentCard", None, 400, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    rest_case("agent-not-live", "POST", "/agents/ghost/message:send", BODY, 400, "INVALID_PARAMS"),
    rest_case(
        "file-part", "POST", SEND, rest_send(message({"raw": "aGk="})), 400, "CONTENT_TYPE_NOT_SUPPORTED"
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "headers", "status", "reason"), REST_CASES)
async def test_rest_refuses(
    gw: Gateway, method: str, path: str, body: bytes | None, headers: dict[str, str], status: int, reason: str
) -> None:
    with anyio.fail_after(5):
        r = await gw.client.request(method, path, content=body, headers=headers)
    check_rest_error(r, status, reason)
    await gw.healthy()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", SEND, rest_send(message(role="ROLE_KING")), id="role-junk"),
        pytest.param(
            "POST", SEND, rest_send(message({"text": "a", "data": {}})), id="part-with-two-contents"
        ),
        pytest.param("POST", SEND, b'{"configuration":{}}', id="message-missing"),
        pytest.param("GET", "/tasks?pageSize=-1", None, id="page-size-negative"),
        pytest.param("GET", "/tasks/abc?historyLength=-1", None, id="history-length-negative"),
    ],
)
async def test_rest_params_of_the_wrong_shape_are_invalid_params(
    gw: Gateway, method: str, path: str, body: bytes | None
) -> None:
    with anyio.fail_after(5):
        r = await gw.client.request(method, path, content=body, headers=V1)
    check_rest_error(r, 400, "INVALID_PARAMS")


async def test_rest_page_size_left_out_means_the_default(gw: Gateway) -> None:
    listing = await gw.list_tasks()
    assert listing["pageSize"] == 50


async def test_a_huge_timeout_is_capped_at_the_maximum(gw: Gateway) -> None:
    body = (
        b'{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],'
        b'"metadata":{"timeoutMs":1e308}}}'
    )
    r = await gw.client.post(SEND, content=body, headers=V1)
    assert r.status_code == 200, r.text
    task = r.json()["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["metadata"]["timeoutMs"] == 600_000  # GatewayConfig.max_timeout (and Settings.max_ttl)


async def raw_http(gw: Gateway, request: bytes, *, timeout: float = 5.0) -> tuple[int, bytes]:
    """Send ``request`` byte for byte (no client-side path normalising); (status, body) of the answer."""
    host, port = gw.url.removeprefix("http://").split(":")
    with anyio.fail_after(timeout):
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(request)
            received = b""
            while b"\r\n\r\n" not in received:
                received += await stream.receive()
            head, _, body = received.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            while len(body) < length:
                body += await stream.receive()
    return int(head.split(b" ")[1]), body


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("POST", "/agents/..", id="dotdot"),
        pytest.param("POST", "/agents/../x", id="dotdot-x"),
        pytest.param("POST", "/agents/../message:send", id="dotdot-rest"),
        pytest.param("GET", "/agents/../tasks", id="dotdot-list"),
        pytest.param("GET", "/agents/../.well-known/agent-card.json", id="dotdot-card"),
        pytest.param("POST", "/agents/%2e%2e/message:send", id="dotdot-encoded"),
        pytest.param("POST", "/agents/a.b", id="dotted"),
        pytest.param("POST", "/agents/a.b/message:send", id="dotted-rest"),
        pytest.param("GET", "/agents/a.b/.well-known/agent-card.json", id="dotted-card"),
        pytest.param("POST", "/agents/echo%00", id="nul"),
        pytest.param("POST", "/agents/*", id="wildcard"),
        pytest.param("POST", "/agents/" + "a" * 300, id="long-name"),
    ],
)
async def test_agent_paths_outside_the_agent_names_are_404(gw: Gateway, method: str, path: str) -> None:
    body = json.dumps(rpc_body("SendMessage", send_params())).encode()
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    status, answer = await raw_http(gw, request)
    assert status == 404, answer
    assert b"Traceback" not in answer
    if answer.startswith(b"{"):
        assert json.loads(answer)["error"]["status"] == "NOT_FOUND"
    await gw.healthy()


async def test_a_declared_oversize_body_is_refused_before_it_is_sent(gw: Gateway) -> None:
    request = (
        "POST /agents/echo HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
        f"Content-Length: {5 * MIB}\r\nConnection: close\r\n\r\n"
    ).encode()
    status, answer = await raw_http(gw, request, timeout=3)
    assert status == 200
    assert json.loads(answer)["error"]["code"] == -32600
    await gw.healthy()


async def test_a_chunked_oversize_body_is_cut_off(gw: Gateway) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
        yield b'"role":"ROLE_USER","parts":[{"text":"'
        for _ in range(5 * 16):
            yield b"x" * (64 * 1024)
        yield b'"}]}}}'

    with anyio.fail_after(10):
        r = await gw.client.post("/agents/echo", content=chunks(), headers=V1)
    check_rpc_error(r, -32600, None)
    await gw.healthy()


async def test_a_bad_content_length_is_a_client_error(gw: Gateway) -> None:
    request = b"POST /agents/echo HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\nConnection: close\r\n\r\n{}"
    status, answer = await raw_http(gw, request)
    assert 400 <= status < 500, answer
    await gw.healthy()


async def test_invalid_utf8_is_a_parse_error_on_jsonrpc(gw: Gateway) -> None:
    body = raw_send(b'"\xff\xfe"')
    with anyio.fail_after(5):
        r = await gw.client.post("/agents/echo", content=body, headers=V1)
    check_rpc_error(r, -32700, None)


async def test_invalid_utf8_is_a_bad_request_on_rest(gw: Gateway) -> None:
    body = b'{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"caf\xe9"}]}}'
    with anyio.fail_after(5):
        r = await gw.client.post("/agents/echo/message:send", content=body, headers=V1)
    check_rest_error(r, 400, "INVALID_REQUEST")


async def test_invalid_utf8_leaves_the_gateway_serving(gw: Gateway) -> None:
    for _ in range(3):
        await gw.client.post("/agents/echo", content=raw_send(b'"\xed\xa0\x80"'), headers=V1)
        await gw.client.post("/message:send", content=b'{"\xff":1}', headers=V1)
    await gw.healthy()


async def test_a_message_needs_a_role(gw: Gateway) -> None:
    r = await gw.client.post(
        "/agents/echo",
        json=rpc_body("SendMessage", send_params(message(role="ROLE_UNSPECIFIED"))),
        headers=V1,
    )
    check_rpc_error(r, -32602, 1)


# -- fuzzing -------------------------------------------------------------------------

JUNK: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**63,
    10**30,
    1e308,
    -0.0,
    "",
    " ",
    "\u0000",
    "x" * 3000,
    "ROLE_USER",
    "TASK_STATE_COMPLETED",
    "../../etc",
    "é中🙂",
    [],
    [None],
    {},
    {"text": "t"},
    {"data": {"action": "say", "params": {"text": 1}}},
    {"action": "nope"},
    [[[[[[]]]]]],
]
KEYS = [
    "message",
    "messageId",
    "role",
    "parts",
    "text",
    "data",
    "raw",
    "url",
    "metadata",
    "contextId",
    "taskId",
    "timeoutMs",
    "skillId",
    "configuration",
    "historyLength",
    "returnImmediately",
    "action",
    "params",
    "agent",
]


def _containers(value: Any, found: list[Any]) -> list[Any]:
    if isinstance(value, dict | list):
        found.append(value)
        for child in value.values() if isinstance(value, dict) else value:
            _containers(child, found)
    return found


def mutate(rng: random.Random, body: dict[str, Any]) -> bytes:
    """One random change to a valid SendMessage params object, as the bytes to send."""
    tree = json.loads(json.dumps(body))
    for _ in range(rng.randint(1, 3)):
        target = rng.choice(_containers(tree, []))
        move = rng.randrange(4)
        if isinstance(target, dict):
            if move == 0 and target:
                del target[rng.choice(list(target))]
            elif move == 1 and target:
                target[rng.choice(list(target))] = rng.choice(JUNK)
            else:
                target[rng.choice(KEYS)] = rng.choice(JUNK)
        elif move == 0 and target:
            target.pop(rng.randrange(len(target)))
        else:
            target.append(rng.choice(JUNK))
    text = json.dumps(tree, ensure_ascii=rng.random() < 0.5)
    if rng.random() < 0.25:  # damage the text itself: cut it, or splice in a printable character
        at = rng.randrange(len(text))
        text = text[:at] if rng.random() < 0.5 else text[:at] + chr(rng.randrange(32, 127)) + text[at:]
    return text.encode()


def check_rpc_answer(r: httpx.Response) -> None:
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["jsonrpc"] == "2.0"
    assert ("result" in body) != ("error" in body), body
    if "error" in body:
        assert body["error"]["code"] in RPC_CODES, body
        assert isinstance(body["error"]["message"], str)
    else:
        assert body["result"]["task"]["status"]["state"] in TERMINAL | {"TASK_STATE_SUBMITTED"}, body


def check_rest_answer(r: httpx.Response) -> None:
    assert r.status_code in (200, 400, 404), r.text
    body = r.json()
    if r.status_code == 200:
        assert body["task"]["status"]["state"] in TERMINAL | {"TASK_STATE_SUBMITTED"}, body
    else:
        assert body["error"]["code"] == r.status_code
        assert body["error"]["details"][0]["reason"] in REASONS, body


async def test_fuzzed_send_messages_always_get_a_well_formed_answer(gw: Gateway) -> None:
    rng = random.Random(20240611)
    valid = {
        "message": message(
            {"text": "hello"},
            {"data": {"action": "say", "params": {"text": "hi"}}},
            contextId="fuzz",
            metadata={"timeoutMs": 2000},
        ),
        "configuration": {"historyLength": 1},
        "metadata": {"note": "fuzz"},
    }
    seen: dict[str, int] = {}
    for i in range(300):
        body = mutate(rng, valid)
        rest = i % 2 == 1
        with anyio.fail_after(5):
            if rest:
                r = await gw.client.post("/agents/echo/message:send", content=body, headers=V1)
            else:
                envelope = (
                    b'{"jsonrpc":"2.0","id":'
                    + str(i).encode()
                    + b',"method":"SendMessage","params":'
                    + body
                    + b"}"
                )
                r = await gw.client.post("/agents/echo", content=envelope, headers=V1)
        try:
            check_rest_answer(r) if rest else check_rpc_answer(r)
        except (AssertionError, ValueError) as exc:
            raise AssertionError(f"mutation {i}: {body[:300]!r} -> {r.status_code} {r.text[:300]}") from exc
        key = str(r.status_code) if rest else str(r.json().get("error", {}).get("code", "ok"))
        seen[key] = seen.get(key, 0) + 1
    # The mutations reach both the decoder and the planner, and some still succeed.
    assert len(seen) >= 4, seen
    await gw.healthy()
