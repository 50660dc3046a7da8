"""The A2A client and proxy's pure logic: interface choice, wire dialects, results, errors, signatures.

Remote answers are plain data: JSON bodies as the official SDK writes them (see
/tmp/a2a-wire.md), served where needed by an ``httpx.MockTransport``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import jwt
import msgspec
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from a2a import peer_agent
from a2a.errors import (
    AgentError,
    AgentLost,
    Cancelled,
    DeadlineExceeded,
    InputRequired,
    InvalidParams,
    NoResponders,
    Overloaded,
    PayloadTooLarge,
    PermissionDenied,
    UnknownAction,
    UnsupportedVersion,
)
from a2a.external import (
    A2AClient,
    Endpoint,
    MalformedResponse,
    NoUsableInterface,
    Progress,
    RemotePeer,
    capability_id,
    card_location,
    card_signature,
    choose_endpoint,
    fetch_card,
    outcome,
    request_message,
)
from a2a.external.dialect import Dialect
from a2a.external.errors import from_http_status, from_protocol_error, from_transport_error
from a2a.external.mapping import accepts_data, artifacts_value, parts_value
from a2a.external.signature import canonical_card
from a2a.testing import TestBroker
from transports.a2a_http import (
    A2AProtocolError,
    AgentCard,
    AgentCardSignature,
    Artifact,
    CancelTaskRequest,
    Message,
    Part,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskStatus,
    convert,
    parse_agent_card,
)
from transports.a2a_http.errors import INVALID_PARAMS, TASK_NOT_FOUND, VERSION_NOT_SUPPORTED

pytestmark = pytest.mark.anyio

BASE = "http://agent.example:8000"


def card(*interfaces: tuple[str, str, str], streaming: bool | None = None, **extra: Any) -> AgentCard:
    return parse_agent_card(
        {
            "name": "Echo",
            "description": "Echoes",
            "version": "1.0.0",
            "capabilities": {} if streaming is None else {"streaming": streaming},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
            "supportedInterfaces": [
                {"url": url, "protocolBinding": binding, "protocolVersion": version}
                for url, binding, version in interfaces
            ],
            **extra,
        }
    )


# -- where the card is, which interface ---------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (BASE, f"{BASE}/.well-known/agent-card.json"),
        (f"{BASE}/", f"{BASE}/.well-known/agent-card.json"),
        (f"{BASE}/agents/echo?x=1", f"{BASE}/agents/echo/.well-known/agent-card.json"),
        (f"{BASE}/.well-known/agent-card.json", f"{BASE}/.well-known/agent-card.json"),
        (f"{BASE}/cards/echo.json", f"{BASE}/cards/echo.json"),
    ],
)
def test_card_location(url: str, expected: str) -> None:
    assert card_location(url) == expected


@pytest.mark.parametrize("url", ["ftp://x/y", "agent.example", "http://", "file:///etc/passwd"])
def test_card_location_needs_an_http_url(url: str) -> None:
    with pytest.raises(ValueError, match="http"):
        card_location(url)


SDK_MERGED = {  # what an SDK server serves (1.0 card merged with its 0.3 view), abridged
    "name": "Echo",
    "description": "Echoes",
    "supportedInterfaces": [
        {"url": f"{BASE}/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": f"{BASE}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": f"{BASE}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    ],
    "version": "1.2.3",
    "capabilities": {"streaming": True},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "echo", "name": "Echo", "description": "Echo back", "tags": ["echo"]}],
    "preferredTransport": "JSONRPC",
    "protocolVersion": "0.3",
    "url": f"{BASE}/rpc",
}


def test_jsonrpc_1_0_is_preferred_whatever_the_card_order() -> None:
    endpoint = choose_endpoint(parse_agent_card(SDK_MERGED), f"{BASE}/.well-known/agent-card.json")
    assert endpoint == Endpoint(f"{BASE}/rpc", "JSONRPC", "1.0", declared_version="1.0")
    assert not endpoint.legacy


@pytest.mark.parametrize(
    ("interfaces", "chosen"),
    [
        ([("/a", "JSONRPC", "0.3"), ("/b", "HTTP+JSON", "1.0")], ("/b", "HTTP+JSON", "1.0")),
        ([("/a", "HTTP+JSON", "0.3"), ("/b", "JSONRPC", "0.3.0")], ("/b", "JSONRPC", "0.3")),
        ([("/a", "HTTP+JSON", "0.3")], ("/a", "HTTP+JSON", "0.3")),
        ([("/a", "JSONRPC", "1.2"), ("/b", "JSONRPC", "1.0")], ("/b", "JSONRPC", "1.0")),
        ([("/a", "JSONRPC", ""), ("/b", "JSONRPC", "1.3")], ("/b", "JSONRPC", "1.0")),
        (
            [("/a", "GRPC", "1.0"), ("/b", "JSONRPC", "2.0"), ("/c", "jsonrpc", "0.3")],
            ("/c", "JSONRPC", "0.3"),
        ),
        ([("/a", "HTTP+JSON", "1.0"), ("/b", "HTTP+JSON", "1.0")], ("/a", "HTTP+JSON", "1.0")),
    ],
)
def test_interface_choice(interfaces: list[tuple[str, str, str]], chosen: tuple[str, str, str]) -> None:
    endpoint = choose_endpoint(card(*interfaces), f"{BASE}/.well-known/agent-card.json")
    assert (endpoint.url, endpoint.binding, endpoint.version) == (BASE + chosen[0], chosen[1], chosen[2])


def test_a_pure_0_3_card_is_spoken_in_0_3() -> None:
    legacy = {k: v for k, v in SDK_MERGED.items() if k != "supportedInterfaces"}
    legacy["protocolVersion"] = "0.3.0"
    legacy["additionalInterfaces"] = [{"url": f"{BASE}/rest", "transport": "HTTP+JSON"}]
    endpoint = choose_endpoint(parse_agent_card(legacy), BASE)
    assert (endpoint.url, endpoint.binding, endpoint.version, endpoint.legacy) == (
        f"{BASE}/rpc",
        "JSONRPC",
        "0.3",
        True,
    )


def test_no_usable_interface() -> None:
    with pytest.raises(NoUsableInterface, match=r"GRPC 1\.0"):
        choose_endpoint(card(("/a", "GRPC", "1.0"), ("ftp://x/", "JSONRPC", "1.0")), BASE)


# -- the four dialects -------------------------------------------------------------------------


def send_request(text: str = "hi") -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id="m1", role="ROLE_USER", parts=[Part(text=text)]))


@pytest.mark.parametrize(("version", "method"), [("1.0", "SendStreamingMessage"), ("0.3", "message/stream")])
def test_jsonrpc_requests(version: str, method: str) -> None:
    dialect = Dialect(Endpoint(f"{BASE}/rpc", "JSONRPC", version))  # type: ignore[arg-type]
    call = dialect.send(send_request(), stream=True)
    body = json.loads(call.body or b"")
    assert (call.method, call.url) == ("POST", f"{BASE}/rpc")
    assert body["jsonrpc"] == "2.0" and body["method"] == method and body["id"] == call.rpc_id
    assert call.headers["A2A-Version"] == version and call.headers["Accept"] == "text/event-stream"
    parts = body["params"]["message"]["parts"]
    assert parts == ([{"text": "hi"}] if version == "1.0" else [{"kind": "text", "text": "hi"}])


@pytest.mark.parametrize(
    ("version", "tenant", "prefix"), [("1.0", "", ""), ("0.3", "", "/v1"), ("1.0", "t/1", "/t%2F1")]
)
def test_rest_requests(version: str, tenant: str, prefix: str) -> None:
    dialect = Dialect(Endpoint(f"{BASE}/rest/", "HTTP+JSON", version, tenant=tenant))  # type: ignore[arg-type]
    assert dialect.send(send_request(), stream=False).url == f"{BASE}/rest{prefix}/message:send"
    cancel = dialect.cancel(CancelTaskRequest(id="a/b"))
    assert (cancel.method, cancel.url) == ("POST", f"{BASE}/rest{prefix}/tasks/a%2Fb:cancel")
    assert cancel.rpc_id is None and cancel.headers["A2A-Version"] == version


def test_jsonrpc_answers_are_checked() -> None:
    dialect = Dialect(Endpoint(BASE, "JSONRPC", "1.0"))
    task = {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}
    assert isinstance(dialect.send_result({"jsonrpc": "2.0", "id": "7", "result": {"task": task}}, "7"), Task)
    with pytest.raises(msgspec.ValidationError, match="id"):
        dialect.send_result({"jsonrpc": "2.0", "id": "8", "result": {"task": task}}, "7")
    with pytest.raises(A2AProtocolError) as caught:
        dialect.task_result({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "gone"}}, "7")
    assert caught.value.spec is TASK_NOT_FOUND and caught.value.message == "gone"


def test_0_3_answers_become_1_0_objects() -> None:
    dialect = Dialect(Endpoint(BASE, "JSONRPC", "0.3"))
    result = {
        "kind": "status-update",
        "taskId": "t1",
        "contextId": "c1",
        "final": True,
        "status": {"state": "completed"},
    }
    event = dialect.stream_event({"jsonrpc": "2.0", "id": "1", "result": result}, "1")
    assert event.status_update is not None and event.status_update.status.state == "TASK_STATE_COMPLETED"
    rest = Dialect(Endpoint(BASE, "HTTP+JSON", "0.3"))
    task = rest.task_result({"id": "t1", "status": {"state": "TASK_STATE_CANCELLED"}}, None)
    assert task.status.state == "TASK_STATE_CANCELED"


# -- what a bus call sends, and what comes back ----------------------------------------------------


def test_the_message_mapping_rule() -> None:
    text = request_message("echo", {"text": "hello"}, skill=True, data=False)
    assert [p.text for p in text.parts] == ["hello"] and text.metadata == {"skillId": "echo"}
    data = request_message("echo", {"text": "x", "n": 1}, skill=True, data=True)
    assert data.parts[0].data == {"action": "echo", "params": {"text": "x", "n": 1}}
    plain = request_message("send", {"text": "hi"}, skill=False, data=False)
    assert plain.metadata is None and plain.role == "ROLE_USER"
    with pytest.raises(InvalidParams, match="text only"):
        request_message("summarize", {"doc": "x"}, skill=True, data=False)


@pytest.mark.parametrize(
    ("modes", "ok"),
    [
        ([], True),
        (["text/plain"], False),
        (["text/plain", "application/json"], True),
        (["application/ld+json"], True),
    ],
)
def test_which_modes_take_data(modes: list[str], ok: bool) -> None:
    assert accepts_data(modes) is ok


def art(*parts: Part, artifact_id: str = "a") -> Artifact:
    return Artifact(artifact_id=artifact_id, parts=list(parts))


def test_results_from_parts_and_artifacts() -> None:
    assert parts_value([]) is None
    assert parts_value([Part(text="a"), Part(text="b")]) == "ab"
    assert parts_value([Part(data={"x": 1})]) == {"x": 1}
    assert parts_value([Part(data=[1, 2])]) == [1, 2]
    assert parts_value([Part(text="a"), Part(data=3)]) == [{"text": "a"}, {"data": 3}]
    assert parts_value([Part(url="https://x/y.png", media_type="image/png")]) == [
        {"url": "https://x/y.png", "mediaType": "image/png"}
    ]
    two = [art(Part(text="one "), Part(text="chunk")), art(Part(text="two"), artifact_id="b")]
    assert artifacts_value(two) == "one chunk\ntwo"
    assert artifacts_value([art(Part(data={"k": "v"})), art()]) == {"k": "v"}


def task(
    state: str, text: str | None = None, *artifacts: Artifact, meta: dict[str, Any] | None = None
) -> Task:
    message = None
    if text is not None:
        message = Message(message_id="s", role="ROLE_AGENT", parts=[Part(text=text)], metadata=meta)
    return Task(id="t1", status=TaskStatus(state=state, message=message), artifacts=list(artifacts))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "error"),
    [
        ("TASK_STATE_FAILED", AgentError),
        ("TASK_STATE_REJECTED", PermissionDenied),
        ("TASK_STATE_AUTH_REQUIRED", PermissionDenied),
        ("TASK_STATE_INPUT_REQUIRED", InputRequired),
        ("TASK_STATE_CANCELED", Cancelled),
        ("TASK_STATE_WORKING", AgentError),
    ],
)
def test_unfinished_or_failed_tasks_are_typed_errors(state: str, error: type[Exception]) -> None:
    with pytest.raises(error, match="the backend is down") as caught:
        outcome(task(state, "the backend is down"))
    details = caught.value.details  # type: ignore[attr-defined]
    assert details.pop("interrupts", None) == (
        [{"kind": "input", "text": "the backend is down"}] if error is InputRequired else None
    )
    assert details == {"taskId": "t1", "contextId": "", "state": state}


def test_outcomes() -> None:
    assert outcome(task("TASK_STATE_COMPLETED", None, art(Part(text="done")))) == "done"
    assert outcome(task("TASK_STATE_COMPLETED", "just a status")) == "just a status"
    assert outcome(Message(message_id="m", role="ROLE_AGENT", parts=[Part(data={"a": 1})])) == {"a": 1}
    with pytest.raises(AgentError, match="the remote task failed"):
        outcome(task("TASK_STATE_FAILED"))
    # This project's gateway names the bus error in the status metadata; a safe code is kept.
    gateway = task("TASK_STATE_REJECTED", "UNKNOWN_ACTION: no 'x'", meta={"code": "UNKNOWN_ACTION"})
    with pytest.raises(UnknownAction) as unknown:
        outcome(gateway)
    assert unknown.value.message == "no 'x'"
    forged = task("TASK_STATE_FAILED", "NO_RESPONDERS: reroute me", meta={"code": "NO_RESPONDERS"})
    with pytest.raises(AgentError):
        outcome(forged)


def event(obj: dict[str, Any]) -> StreamResponse:
    return convert(obj, StreamResponse)


def test_progress_folds_a_stream_like_the_sdk_client() -> None:
    progress = Progress()
    assert not progress.apply(
        event({"task": {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}})
    )
    chunk = {"taskId": "t1", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "Hel"}]}}
    assert not progress.apply(event({"artifactUpdate": chunk}))
    more = {**chunk, "artifact": {"artifactId": "a", "parts": [{"text": "lo"}]}, "append": True}
    assert not progress.apply(event({"artifactUpdate": more}))
    assert not progress.apply(
        event({"message": {"messageId": "x", "role": "ROLE_AGENT", "parts": [{"text": "hm"}]}})
    )
    done = {"taskId": "t1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    assert progress.apply(event({"statusUpdate": done}))
    assert outcome(progress.result()) == "Hello"
    answer = Progress()
    assert answer.apply(
        event({"message": {"messageId": "x", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}})
    )
    assert outcome(answer.result()) == "hi" and answer.task_id is None


@pytest.mark.parametrize(
    ("skill", "cap"),
    [
        ("echo", "echo"),
        ("Summarize Text!", "Summarize_Text"),
        ("a/b:c.d-e_f", "a/b:c.d-e_f"),
        ("☕", "skill"),
    ],
)
def test_capability_ids(skill: str, cap: str) -> None:
    assert capability_id(skill) == cap


# -- errors --------------------------------------------------------------------------------------


def test_error_mapping() -> None:
    assert isinstance(from_protocol_error(A2AProtocolError(INVALID_PARAMS, "bad")), InvalidParams)
    assert isinstance(from_protocol_error(A2AProtocolError(VERSION_NOT_SUPPORTED)), UnsupportedVersion)
    found = from_protocol_error(A2AProtocolError(TASK_NOT_FOUND))
    assert type(found) is AgentError and found.details["a2aCode"] == -32001
    assert isinstance(from_http_status(401, "no key"), PermissionDenied)
    assert isinstance(from_http_status(429), Overloaded)
    assert isinstance(from_http_status(503), NoResponders)
    assert isinstance(from_http_status(504), DeadlineExceeded)
    assert from_http_status(500) is None and from_http_status(404) is None
    request = httpx.Request("POST", BASE)
    assert isinstance(
        from_transport_error(httpx.ConnectError("refused", request=request), BASE), NoResponders
    )
    assert isinstance(
        from_transport_error(httpx.ReadTimeout("slow", request=request), BASE), DeadlineExceeded
    )
    assert isinstance(
        from_transport_error(httpx.RemoteProtocolError("eof", request=request), BASE), AgentLost
    )


Handler = Callable[[httpx.Request], httpx.Response]


def client_for(handler: Handler, version: str = "1.0", binding: str = "JSONRPC", **limits: int) -> A2AClient:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return A2AClient(Endpoint(BASE, binding, version), http=http, **limits)  # type: ignore[arg-type]


def rpc_answer(request: httpx.Request, result: Any) -> httpx.Response:
    return httpx.Response(
        200, json={"jsonrpc": "2.0", "id": json.loads(request.content)["id"], "result": result}
    )


MESSAGE = Message(message_id="m", role="ROLE_USER", parts=[Part(text="hi")])


@pytest.mark.parametrize(
    ("response", "error", "match"),
    [
        (httpx.Response(200, content=b"<html>"), MalformedResponse, "not JSON"),
        (
            httpx.Response(200, json={"jsonrpc": "2.0", "id": "?", "result": {}}),
            MalformedResponse,
            "not valid",
        ),
        (httpx.Response(200, content=b"x" * 2000), PayloadTooLarge, "1000"),
        (httpx.Response(401, json={"error": "missing X-Api-Key"}), PermissionDenied, "missing X-Api-Key"),
        (httpx.Response(500, text="boom"), AgentError, "HTTP 500"),
    ],
)
async def test_bad_answers_are_typed_errors(
    response: httpx.Response, error: type[Exception], match: str
) -> None:
    async with client_for(lambda _: response, max_body=1000) as client:
        with pytest.raises(error, match=match):
            await client.send(MESSAGE, timeout=5)


async def test_fetching_a_card() -> None:
    def serve(request: httpx.Request) -> httpx.Response:
        assert request.headers["A2A-Version"] == "1.0" and request.headers["X-Api-Key"] == "k"
        if request.url.path == "/.well-known/agent-card.json":
            return httpx.Response(200, json=SDK_MERGED)
        if request.url.path == "/big.json":
            return httpx.Response(200, content=b" " * (2 << 20))
        return httpx.Response(404, text="Not Found")

    async with httpx.AsyncClient(transport=httpx.MockTransport(serve)) as http:
        got, location = await fetch_card(BASE, headers={"X-Api-Key": "k"}, http=http)
        assert got.name == "Echo" and location == f"{BASE}/.well-known/agent-card.json"
        with pytest.raises(AgentError, match=r"no agent card at .*/nope\.json: HTTP 404: Not Found"):
            await fetch_card(f"{BASE}/nope.json", headers={"X-Api-Key": "k"}, http=http)
        with pytest.raises(PayloadTooLarge):
            await fetch_card(f"{BASE}/big.json", headers={"X-Api-Key": "k"}, http=http)


async def test_a_stream_reads_events_and_bounds_them() -> None:
    def sse(request: httpx.Request) -> httpx.Response:
        rpc_id = json.loads(request.content)["id"]
        status = {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
        events = [
            {
                "jsonrpc": "2.0",
                "id": rpc_id,
                "result": {"task": {"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}},
            },
            {"jsonrpc": "2.0", "id": rpc_id, "result": {"statusUpdate": status}},
        ]
        body = b": ping\r\n\r\n" + b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    async with client_for(sse) as client:
        got = [e async for e in client.stream(MESSAGE, timeout=5)]
    assert [type(e.event).__name__ for e in got] == ["Task", "TaskStatusUpdateEvent"]
    async with client_for(sse, max_event=100) as client:
        with pytest.raises(PayloadTooLarge):
            _ = [e async for e in client.stream(MESSAGE, timeout=5)]

    def upfront_error(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "no"}}
        )

    async with client_for(upfront_error) as client:
        with pytest.raises(InvalidParams, match="no"):
            _ = [e async for e in client.stream(MESSAGE, timeout=5)]


# -- the proxy's withdrawal, on the in-memory broker --------------------------------------------------


async def test_a_withdrawn_call_cancels_the_remote_task() -> None:
    seen: list[str] = []

    def remote(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body["method"])
        working = {"id": "t9", "status": {"state": "TASK_STATE_WORKING"}}
        if body["method"] == "SendMessage":
            assert body["params"]["configuration"] == {"returnImmediately": True}
            return rpc_answer(request, {"task": working})
        if body["method"] == "CancelTask":
            assert body["params"] == {"id": "t9"}
            return rpc_answer(request, {**working, "status": {"state": "TASK_STATE_CANCELED"}})
        return rpc_answer(request, working)

    remote_card = card((BASE, "JSONRPC", "1.0"), streaming=False)
    http = httpx.AsyncClient(transport=httpx.MockTransport(remote))
    peer = RemotePeer(remote_card, choose_endpoint(remote_card, BASE), http=http)
    async with (
        http,
        TestBroker() as broker,
        broker.runtime(peer_agent("ext", peer, actions={"send": None}, trust=peer.tracker)) as rt,
    ):
        with pytest.raises(DeadlineExceeded):
            await rt.call("ext", "send", {"text": "slow"}, timeout=0.4)
        with anyio.fail_after(2):  # the handler withdraws the task, then counts the failure
            while not peer.tracker.evidence(time.monotonic()):
                await anyio.sleep(0.01)
    assert seen[0] == "SendMessage" and "GetTask" in seen and seen[-1] == "CancelTask"
    assert peer.trust_score() < 0.5  # the timeout counted against the remote


async def test_a_remote_gone_mid_task_is_agent_lost() -> None:
    """Once the remote runs the task, losing it is AGENT_LOST, never NO_RESPONDERS (which would
    tell routing the call never ran)."""

    def remote(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["method"] == "SendMessage":
            return rpc_answer(request, {"task": {"id": "t9", "status": {"state": "TASK_STATE_WORKING"}}})
        raise httpx.ConnectError("connection refused", request=request)

    remote_card = card((BASE, "JSONRPC", "1.0"), streaming=False)
    http = httpx.AsyncClient(transport=httpx.MockTransport(remote))
    peer = RemotePeer(remote_card, choose_endpoint(remote_card, BASE), http=http)
    async with http, TestBroker() as broker, broker.runtime(peer_agent("ext", peer)) as rt:
        with pytest.raises(AgentLost, match="mid-task"):
            await rt.call("ext", "send", {"text": "x"}, timeout=2)


# -- card signatures ---------------------------------------------------------------------------


def signed(card_obj: AgentCard, key: Ed25519PrivateKey, alg: str = "EdDSA") -> AgentCard:
    token = jwt.PyJWS().encode(canonical_card(card_obj), key, algorithm=alg, headers={"kid": "k1"})
    protected, _, signature = token.split(".")
    return msgspec.structs.replace(
        card_obj, signatures=[AgentCardSignature(protected=protected, signature=signature)]
    )


def test_card_signatures() -> None:
    key = Ed25519PrivateKey.generate()
    public = key.public_key()
    plain = card((BASE, "JSONRPC", "1.0"), streaming=False, description="Échos ☕ — \U0001f600")
    good = signed(plain, key)
    assert card_signature(plain, [public]) == "unsigned"
    assert card_signature(good, []) == "unsigned"  # nothing to check it with
    assert card_signature(good, [public]) == "verified"
    other = Ed25519PrivateKey.generate().public_key()
    assert card_signature(good, [other, public]) == "verified"
    assert card_signature(good, [other]) == "invalid"
    tampered = msgspec.structs.replace(good, description="Echoes, and more")
    assert card_signature(tampered, [public]) == "invalid"
    hmac = msgspec.structs.replace(
        good,
        signatures=[
            AgentCardSignature(protected=base64.urlsafe_b64encode(b'{"alg":"HS256"}').decode(), signature="x")
        ],
    )
    assert card_signature(hmac, [public]) == "invalid"
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert card_signature(good, [serialization.load_pem_public_key(pem)]) == "verified"


def test_canonical_form_sorts_keys_by_utf16_and_drops_empty_values() -> None:
    plain = card((BASE, "JSONRPC", "1.0"), streaming=False)
    text = canonical_card(plain).decode()
    assert text.startswith('{"capabilities":{"streaming":false},"defaultInputModes":["text/plain"]')
    assert '"skills"' not in text and '"signatures"' not in text  # empty and excluded


def test_a_stream_of_endless_artifact_parts_is_cut_off() -> None:
    progress = Progress()
    progress.apply(event({"task": {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}))
    chunk = {
        "taskId": "t1",
        "contextId": "c",
        "artifact": {"artifactId": "a", "parts": [{"text": "x"}] * 100},
    }
    with pytest.raises(PayloadTooLarge):
        for _ in range(200):  # 20,000 parts, appended to one artifact
            progress.apply(event({"artifactUpdate": {**chunk, "append": True}}))
    assert progress.parts <= 10_100


def test_an_interface_on_another_host_is_not_used_unless_allowed() -> None:
    elsewhere = card(("https://collector.example.net/rpc", "JSONRPC", "1.0"))
    with pytest.raises(NoUsableInterface, match="own origin"):
        choose_endpoint(elsewhere, f"{BASE}/.well-known/agent-card.json")
    endpoint = choose_endpoint(elsewhere, f"{BASE}/.well-known/agent-card.json", any_origin=True)
    assert endpoint.url == "https://collector.example.net/rpc"
