"""An A2A echo agent built with the public ``a2a-sdk`` 1.3; runs only in the SDK venv.

It serves A2A 1.0 and the SDK's 0.3 compatibility layer over JSON-RPC (at ``/``) and
HTTP+JSON (1.0 at ``/message:send`` etc., 0.3 at ``/v1/message:send`` etc.), with the
agent card at ``/.well-known/agent-card.json``.

With ``--push`` it keeps push-notification configs in memory and delivers to any URL.

The executor answers with a completed task whose single artifact (named ``echo``) repeats
the input message's parts unchanged (text as text, data as data). The artifact metadata
carries ``agent`` (the ``--name``), ``messageMetadata``, ``requestMetadata`` and
``headers`` (the request headers named by ``--echo-headers``).

Prints exactly one line, ``READY <port>``, on stdout once listening; logs to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from a2a.helpers import new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.responses import JSONResponse

log = logging.getLogger("echo_server")

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
AppBuilder = Callable[[argparse.Namespace, AgentCard], ASGIApp]
BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON"}


class EchoExecutor(AgentExecutor):
    """Echoes the message after ``delay`` seconds of ``working`` steps; honours cancellation."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cancelled: dict[str, asyncio.Event] = {}

    def _log_cancel(self, what: str, task_id: str) -> None:
        if self.args.cancel_log:
            with open(self.args.cancel_log, "a") as f:
                f.write(f"{what} {task_id}\n")

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task_id, context_id = context.task_id or "", context.context_id or ""
        if message is None:
            raise ValueError("no message in the request")
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=[message])
            )
        cancelled = self.cancelled.setdefault(task_id, asyncio.Event())
        updater = TaskUpdater(event_queue, task_id, context_id)
        try:
            await updater.start_work()
            steps = max(1, round(self.args.delay / self.args.step)) if self.args.delay > 0 else 0
            for i in range(steps):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(cancelled.wait(), self.args.step)
                if cancelled.is_set():
                    return  # cancel() has already published the canceled state
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING, metadata={"step": i + 1, "steps": steps}
                )
            if self.args.fail:
                await updater.failed(updater.new_agent_message([new_text_part(self.args.fail)]))
                return
            headers = context.call_context.state.get("headers", {})
            await updater.add_artifact(
                list(message.parts),
                name="echo",
                metadata={
                    "agent": self.args.name,
                    "messageMetadata": MessageToDict(message.metadata),
                    "requestMetadata": context.metadata,
                    "headers": {h: headers.get(h.lower()) for h in self.args.echo_headers},
                },
            )
            await updater.complete()
        except asyncio.CancelledError:
            self._log_cancel("interrupted", task_id)
            raise
        finally:
            self.cancelled.pop(task_id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        self._log_cancel("cancel", task_id)
        event = self.cancelled.get(task_id)
        if event is not None:
            event.set()
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()


def _security(card: AgentCard, header: str) -> None:
    name, _, value = header.partition(":")
    name, value = name.strip(), value.strip()
    if name.lower() == "authorization" and value.lower().startswith("bearer "):
        scheme = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer"))
        key = "bearer"
    else:
        scheme = SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location="header", name=name))
        key = "apiKey"
    card.security_schemes[key].CopyFrom(scheme)
    card.security_requirements.append(SecurityRequirement(schemes={key: StringList(list=[])}))


def build_card(args: argparse.Namespace, base: str) -> AgentCard:
    interfaces = [
        AgentInterface(
            url=f"{base}/" if binding == "jsonrpc" else base,
            protocol_binding=BINDINGS[binding],
            protocol_version=version,
        )
        for version in args.versions
        for binding in args.bindings
    ]
    card = AgentCard(
        name=args.name,
        description="Echoes its input back as an artifact (an a2a-sdk interop agent).",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=args.streaming, push_notifications=args.push),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id=s, name=s, description=f"Echo skill {s}", tags=["echo"]) for s in args.skills],
    )
    if args.require_header:
        _security(card, args.require_header)
    return card


def require_header(app: ASGIApp, header: str) -> ASGIApp:
    """Answers 401 to any request but the card's that lacks ``header`` (``Name: value``)."""
    name, _, value = header.partition(":")
    wanted = (name.strip().lower().encode(), value.strip().encode())

    async def guarded(scope: Scope, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] != AGENT_CARD_WELL_KNOWN_PATH
            and wanted not in [(k.lower(), v) for k, v in scope["headers"]]
        ):
            response = JSONResponse({"error": f"missing or wrong {name.strip()} header"}, 401)
            await response(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def build_app(args: argparse.Namespace, card: AgentCard, executor: AgentExecutor | None = None) -> ASGIApp:
    """The app serving ``executor`` (an :class:`EchoExecutor` by default) with ``card``."""
    push: dict[str, Any] = {}
    if args.push:
        store = InMemoryPushNotificationConfigStore()
        sender = BasePushNotificationSender(httpx.AsyncClient(), store)
        push = {"push_config_store": store, "push_sender": sender}
    handler = DefaultRequestHandler(
        agent_executor=executor or EchoExecutor(args), task_store=InMemoryTaskStore(), agent_card=card, **push
    )
    compat = "0.3" in args.versions
    routes: list[Any] = list(create_agent_card_routes(card))
    if "jsonrpc" in args.bindings:
        routes += create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=compat)
    if "rest" in args.bindings:
        routes += create_rest_routes(handler, enable_v0_3_compat=compat)
    app: ASGIApp = Starlette(routes=routes)
    return require_header(app, args.require_header) if args.require_header else app


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed in READY)")
    p.add_argument("--name", default="sdk-echo")
    p.add_argument("--delay", type=float, default=0.0, help="seconds of work before answering")
    p.add_argument("--step", type=float, default=0.1, help="seconds per working step")
    p.add_argument("--cancel-log", type=Path, help="append 'cancel <task id>' when a task is cancelled")
    p.add_argument("--fail", metavar="MESSAGE", help="fail the task with this message")
    p.add_argument("--skills", default="echo", help="comma-separated skill ids for the card")
    p.add_argument("--streaming", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--push", action="store_true", help="store push configs and deliver to any URL")
    p.add_argument("--versions", default="1.0,0.3", help="protocol versions to serve: 1.0, 0.3 or both")
    p.add_argument("--bindings", default="jsonrpc,rest", help="jsonrpc, rest or both (order = preference)")
    p.add_argument("--require-header", metavar="'NAME: VALUE'", help="reject calls without this header")
    p.add_argument("--echo-headers", default="", metavar="NAME,...", help="request headers to echo")
    args = p.parse_args(argv)
    args.skills = [s for s in args.skills.split(",") if s]
    args.echo_headers = [h.strip() for h in args.echo_headers.split(",") if h.strip()]
    args.versions = [v for v in args.versions.split(",") if v]
    args.bindings = [b for b in args.bindings.split(",") if b]
    if not set(args.versions) <= {"1.0", "0.3"} or not args.versions:
        p.error("--versions takes 1.0 and/or 0.3")
    if not set(args.bindings) <= set(BINDINGS) or not args.bindings:
        p.error("--bindings takes jsonrpc and/or rest")
    return args


async def serve(args: argparse.Namespace, build: AppBuilder) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # else each response waits ~40 ms for an ACK
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]
    card = build_card(args, f"http://{args.host}:{port}")
    config = uvicorn.Config(
        build(args, card), log_level="warning", timeout_graceful_shutdown=1, lifespan="off"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            raise SystemExit("uvicorn stopped before it started")
        await asyncio.sleep(0.01)
    log.warning(
        "%s serving A2A %s over %s on port %d",
        args.name,
        "+".join(args.versions),
        "+".join(BINDINGS[b] for b in args.bindings),
        port,
    )
    print(f"READY {port}", flush=True)
    await task


def main_with(args: argparse.Namespace, build: AppBuilder) -> None:
    """Serve the app ``build`` makes of the arguments and the card (other agents reuse this)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    asyncio.run(serve(args, build))


def main(argv: list[str] | None = None) -> None:
    main_with(parse_args(argv), build_app)


if __name__ == "__main__":
    main()
