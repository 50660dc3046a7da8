"""An A2A agent built with the public ``a2a-sdk`` 1.3 that keeps conversations; runs only in the SDK venv.

Serves the same interfaces and card as ``echo_server`` (its flags too). Every task ends
with one data value::

    {"contextId": ..., "taskId": ..., "turns": [<every text of this context so far>],
     "continued": <whether the message continued an existing task>}

Flags of its own:

- ``--ask QUESTION``: a new task stops in ``input-required`` with QUESTION as its status
  message; the next message naming that task completes it.
- ``--result-in-store``: the result is written to the task store once the task completed,
  not sent as an artifact event: a stream carries only the final ``completed`` status
  (every answer saying ``completed`` is held back 0.3 s, so that the store has it by then).
- ``--drop-streams N``: the first N event streams (``SendStreamingMessage``) are cut,
  the connection aborted, after their first event; the task goes on.
- ``--unavailable-after-drop S``: for S seconds after a cut, every request but the
  card's is answered 503.
- ``--signature PROTECTED.SIGNATURE``: list this JWS signature on the card (whether it
  verifies is the test's business).
- ``--request-log PATH``: append each request's operation (the JSON-RPC method, or the
  HTTP method and path) to PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from a2a.helpers import new_data_part, new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCard, AgentCardSignature, Artifact, TaskState
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from echo_server import ASGIApp, Scope, main_with, parse_args
from starlette.applications import Starlette
from starlette.responses import JSONResponse


class TurnsExecutor(AgentExecutor):
    def __init__(self, args: argparse.Namespace, store: InMemoryTaskStore) -> None:
        self.args = args
        self.store = store
        self.turns: dict[str, list[str]] = defaultdict(list)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        if message is None:
            raise ValueError("no message in the request")
        task_id, context_id = context.task_id or "", context.context_id or ""
        continued = context.current_task is not None
        self.turns[context_id] += [p.text for p in message.parts if p.HasField("text")]
        if not continued:
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=[message])
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        if self.args.ask and not continued:
            await updater.requires_input(updater.new_agent_message([new_text_part(self.args.ask)]))
            return
        for _ in range(max(0, round(self.args.delay / self.args.step))):
            await asyncio.sleep(self.args.step)
            await updater.update_status(TaskState.TASK_STATE_WORKING)
        value = {
            "contextId": context_id,
            "taskId": task_id,
            "turns": self.turns[context_id],
            "continued": continued,
        }
        if not self.args.result_in_store:
            await updater.add_artifact([new_data_part(value)], name="result")
            await updater.complete()
            return
        await updater.complete()
        task = None
        for _ in range(200):  # the handler stores the task as it consumes the events
            task = await self.store.get(task_id, context.call_context)
            if task is not None and task.status.state == TaskState.TASK_STATE_COMPLETED:
                break
            await asyncio.sleep(0.01)
        assert task is not None
        task.artifacts.append(Artifact(artifact_id="result", parts=[new_data_part(value)]))
        await self.store.save(task, context.call_context)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def _operation(scope: Scope, body: bytes) -> str:
    if scope["method"] == "POST" and scope["path"] == "/":
        try:
            return str(json.loads(body).get("method"))
        except ValueError:
            return "?"
    return f"{scope['method']} {scope['path']}"


def _log(path: Path, line: str) -> None:
    with open(path, "a") as log:
        log.write(line + "\n")


def flaky(app: ASGIApp, args: argparse.Namespace) -> ASGIApp:
    """Logs operations, cuts the first ``--drop-streams`` streams, then answers 503 a while."""
    state = {"drops": args.drop_streams, "down_until": 0.0}

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] == AGENT_CARD_WELL_KNOWN_PATH:
            await app(scope, receive, send)
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        body = b"".join(chunks)
        operation = _operation(scope, body)
        if args.request_log:
            _log(args.request_log, operation)
        if time.monotonic() < state["down_until"]:
            await JSONResponse({"error": "restarting"}, 503)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        streams = operation in ("SendStreamingMessage", "message/stream") or operation.endswith(":stream")
        cut = streams and state["drops"] > 0
        if cut:
            state["drops"] -= 1

        async def cutting(event: dict[str, Any]) -> None:
            chunk = event.get("body", b"")
            if args.result_in_store and (b"TASK_STATE_COMPLETED" in chunk or b'"completed"' in chunk):
                await asyncio.sleep(0.3)  # the executor writes the result to the store meanwhile
            await send(event)
            if cut and event["type"] == "http.response.body" and b"data:" in event.get("body", b""):
                state["down_until"] = time.monotonic() + args.unavailable_after_drop
                raise ConnectionAbortedError("the stream is cut on purpose")

        await app(scope, replay, cutting)

    return wrapped


def build_app(args: argparse.Namespace, card: AgentCard) -> ASGIApp:
    if args.signature:
        protected, _, signature = args.signature.partition(".")
        card.signatures.append(AgentCardSignature(protected=protected, signature=signature))
    store = InMemoryTaskStore()
    executor = TurnsExecutor(args, store)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=store, agent_card=card)
    compat = "0.3" in args.versions
    routes: list[Any] = list(create_agent_card_routes(card))
    if "jsonrpc" in args.bindings:
        routes += create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=compat)
    if "rest" in args.bindings:
        routes += create_rest_routes(handler, enable_v0_3_compat=compat)
    return flaky(Starlette(routes=routes), args)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--ask", default="")
    p.add_argument("--result-in-store", action="store_true")
    p.add_argument("--drop-streams", type=int, default=0)
    p.add_argument("--unavailable-after-drop", type=float, default=0.0)
    p.add_argument("--request-log", type=Path)
    p.add_argument("--signature", default="")
    own, rest = p.parse_known_args(argv)
    args = parse_args(rest)
    for key, value in vars(own).items():
        setattr(args, key, value)
    return args


if __name__ == "__main__":
    main_with(parse(sys.argv[1:]), build_app)
