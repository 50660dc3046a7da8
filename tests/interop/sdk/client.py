"""A command-line A2A client built with the public ``a2a-sdk`` 1.3; runs only in the SDK venv.

    client.py --url BASE [options] OP [ARG]

OP is one of ``send TEXT``, ``send-data JSON``, ``stream TEXT``, ``get TASK_ID``,
``cancel TASK_ID``, ``card`` and ``send-then-cancel TEXT [--after SECONDS]``.

Prints one JSON object per line on stdout, as soon as it is known: the SDK object as
protobuf JSON (camelCase keys) with ``"op"`` (the client call that produced it: send,
stream, get, cancel, card) and ``"event"`` (task, message, status-update,
artifact-update, card, interface; stream-error when a stream breaks after a cancel).
On failure prints ``{"error": {"type", "code", "message", "httpStatus", "data"}}``
and exits 1: ``type`` is the exception class, ``code`` its JSON-RPC error code.

``--version`` picks the protocol by hiding the card's other interfaces from the SDK,
which otherwise always prefers 1.0. Headers given with ``--header`` go on every request,
the card fetch included; the SDK adds ``A2A-Version`` (1.0, or 0.3 on 0.3 transports).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.message import Message as ProtoMessage
from google.protobuf.struct_pb2 import Value

log = logging.getLogger("sdk_client")

OPS = ("send", "send-data", "stream", "get", "cancel", "card", "send-then-cancel")
BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON"}
SKILL_METADATA_KEY = "skillId"
"""``--skill ID`` sets this key of the message metadata."""
EVENTS = {
    "task": "task",
    "message": "message",
    "status_update": "status-update",
    "artifact_update": "artifact-update",
}


class NoCompatibleInterfaceError(Exception):
    """The card offers no interface with the requested binding and version."""


def emit(op: str, event: str, obj: ProtoMessage | None = None, **extra: Any) -> None:
    line = {"op": op, "event": event, **(MessageToDict(obj) if obj is not None else {}), **extra}
    print(json.dumps(line), flush=True)


def emit_response(op: str, response: StreamResponse) -> str:
    """Prints a stream event; returns the task id it names ("" for a bare message)."""
    kind = response.WhichOneof("payload") or "task"
    payload = getattr(response, kind)
    emit(op, EVENTS[kind], payload)
    if kind == "task":
        return str(payload.id)
    return str(getattr(payload, "task_id", ""))


def error_info(exc: BaseException) -> dict[str, Any]:
    http_status = None
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, httpx.HTTPStatusError):
            http_status = cause.response.status_code
        cause = cause.__cause__
    return {
        "type": type(exc).__name__,
        "code": JSON_RPC_ERROR_CODE_MAP.get(type(exc)),
        "message": str(exc),
        "httpStatus": http_status,
        "data": getattr(exc, "data", None),
    }


def _major_minor(version: str) -> str:
    return ".".join((version or "1.0").split(".")[:2])


def usable_interfaces(card: AgentCard, binding: str, version: str | None) -> list[AgentInterface]:
    return [
        i
        for i in card.supported_interfaces
        if i.protocol_binding == BINDINGS[binding]
        and (version is None or _major_minor(i.protocol_version) == version)
    ]


def restrict_card(card: AgentCard, binding: str, version: str | None) -> AgentCard:
    """A copy of ``card`` listing only the interfaces the client may use.

    The SDK prefers 1.0 whenever a card lists it for the binding (even at the same URL as a
    0.3 interface), so choosing 0.3 means hiding the 1.0 interfaces from the factory.
    """
    wanted = usable_interfaces(card, binding, version)
    if not wanted:
        offered = [f"{i.protocol_binding} {i.protocol_version or '?'}" for i in card.supported_interfaces]
        raise NoCompatibleInterfaceError(
            f"no {BINDINGS[binding]} {version or 'any-version'} interface on the card (it offers {offered})"
        )
    restricted = AgentCard()
    restricted.CopyFrom(card)
    del restricted.supported_interfaces[:]
    restricted.supported_interfaces.extend(wanted)
    return restricted


def build_request(args: argparse.Namespace, *, return_immediately: bool = False) -> SendMessageRequest:
    parts: list[Part] = []
    if args.op == "send-data":
        parts.append(Part(data=ParseDict(json.loads(args.arg), Value())))
    else:
        parts.append(Part(text=args.arg))
    parts += [Part(data=ParseDict(d, Value())) for d in args.data]
    message = Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts, context_id=args.context_id or ""
    )
    metadata = dict(args.metadata or {})
    if args.skill:
        metadata[SKILL_METADATA_KEY] = args.skill
    if metadata:
        message.metadata.update(metadata)
    request = SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(
            return_immediately=return_immediately or args.return_immediately
        ),
    )
    if args.request_metadata:
        request.metadata.update(args.request_metadata)
    return request


async def send_then_cancel(client: Client, args: argparse.Namespace, streaming: bool) -> None:
    """Starts the task, cancels it ``--after`` seconds later, prints the cancel result and the task."""
    if streaming:
        found: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def consume() -> None:
            async for response in client.send_message(build_request(args)):
                task_id = emit_response("stream", response)
                if task_id and not found.done():
                    found.set_result(task_id)

        consumer = asyncio.create_task(consume())
        await asyncio.wait({consumer, found}, timeout=args.timeout, return_when=asyncio.FIRST_COMPLETED)
        if not found.done():
            if consumer.done():
                consumer.result()
                raise RuntimeError("the stream ended before naming a task")
            consumer.cancel()
            raise TimeoutError("no task id within --timeout")
        task_id = found.result()
    else:
        consumer = None
        task_id = ""
        async for response in client.send_message(build_request(args, return_immediately=True)):
            task_id = emit_response("send", response) or task_id
        if not task_id:
            raise RuntimeError("the agent answered with a message, not a task")
    await asyncio.sleep(args.after)
    emit("cancel", "task", await client.cancel_task(CancelTaskRequest(id=task_id)))
    if consumer is not None:
        try:
            await asyncio.wait_for(consumer, 5)
        except Exception as exc:  # the stream may be cut when the task is cancelled
            emit("stream", "stream-error", error=error_info(exc))
    emit("get", "task", await client.get_task(GetTaskRequest(id=task_id)))


async def run(args: argparse.Namespace) -> None:
    headers = dict(h.split(":", 1) for h in args.header)
    async with httpx.AsyncClient(
        headers={k.strip(): v.strip() for k, v in headers.items()}, timeout=args.timeout
    ) as http:
        streaming = args.op == "stream" or (args.op == "send-then-cancel" and not args.no_stream)
        config = ClientConfig(
            streaming=streaming,
            httpx_client=http,
            supported_protocol_bindings=[BINDINGS[args.binding]],
            use_client_preference=True,
        )
        factory = ClientFactory(config)  # sets the A2A-Version: 1.0 default header on `http`
        if args.card_url:
            resolver = A2ACardResolver(http, args.card_url, agent_card_path="")
        else:
            resolver = A2ACardResolver(http, args.url)
        card = await resolver.get_agent_card()
        if args.op == "card":
            emit("card", "card", card)
            best = ClientFactory._find_best_interface(usable_interfaces(card, args.binding, args.version))
            if best is not None:
                emit("card", "interface", best)
            return
        restricted = restrict_card(card, args.binding, args.version)
        client = factory.create(restricted)
        log.info("using %s", ClientFactory._find_best_interface(list(restricted.supported_interfaces)))
        try:
            if args.op in ("send", "send-data", "stream"):
                async for response in client.send_message(build_request(args)):
                    emit_response(args.op if args.op != "send-data" else "send", response)
            elif args.op == "get":
                emit("get", "task", await client.get_task(GetTaskRequest(id=args.arg)))
            elif args.op == "cancel":
                emit("cancel", "task", await client.cancel_task(CancelTaskRequest(id=args.arg)))
            else:
                await send_then_cancel(client, args, streaming and card.capabilities.streaming)
        finally:
            await client.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", choices=OPS)
    p.add_argument("arg", nargs="?", help="TEXT, JSON or TASK_ID, depending on OP")
    p.add_argument("--url", help="agent base URL; the card is read from BASE/.well-known/agent-card.json")
    p.add_argument("--card-url", help="full URL of the agent card (instead of --url)")
    p.add_argument("--binding", choices=tuple(BINDINGS), default="jsonrpc")
    p.add_argument("--version", choices=("1.0", "0.3"), help="protocol version (default: the SDK's pick)")
    p.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'")
    p.add_argument("--metadata", type=json.loads, help="message metadata (JSON object)")
    p.add_argument("--request-metadata", type=json.loads, help="send request metadata (JSON object)")
    p.add_argument("--skill", help=f"sets message metadata {SKILL_METADATA_KEY!r}")
    p.add_argument("--data", type=json.loads, action="append", default=[], help="extra data part (JSON)")
    p.add_argument("--context-id")
    p.add_argument("--return-immediately", action="store_true", help="non-blocking send")
    p.add_argument("--after", type=float, default=1.0, help="send-then-cancel: seconds before cancelling")
    p.add_argument("--no-stream", action="store_true", help="send-then-cancel: non-blocking send")
    p.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds")
    p.add_argument("-v", "--verbose", action="store_true", help="SDK logs at INFO on stderr")
    args = p.parse_intermixed_args(argv)
    if not (args.url or args.card_url):
        p.error("--url or --card-url is required")
    if args.op != "card" and args.arg is None:
        p.error(f"{args.op} needs an argument")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(name)s: %(message)s",
    )
    try:
        asyncio.run(run(args))
    except Exception as exc:
        print(json.dumps({"error": error_info(exc)}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
