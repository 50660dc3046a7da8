"""The console's HTTP side: the page, a JSON API over sessions (and durable tasks, see
:mod:`a2a.console.tasks_api`), and one event stream (SSE).

The page gets what a person needs and nothing more: sessions (their turns, state and
ending), the registry, the remote agents a local agent may send to, and the call records
of the user's conversations (those still running too). Credentials, tokens and the local
agent's bridge frames never reach it. Every input is checked: a bad one gets a typed error
(``{"error": {"code", "message"}}``), never a traceback.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from bus.errors import InvalidParams
from bus.subjects import validate_name

from ..sessions import Limits, Sessions
from .auth import COOKIE, ConsoleAuth
from .controls import apply_control
from .feed import Event, Feed
from .http import body_of, for_user, reply, text_field
from .links import Jaeger
from .rows import agent_row, call_row, session_row
from .tasks import TaskView
from .tasks_api import task_routes

__all__ = ["console_app"]

STATIC = Path(__file__).resolve().parent / "static"
_FILES = {
    "console.css": "text/css",
    "console.js": "text/javascript",
    "session.js": "text/javascript",
    "calls.js": "text/javascript",
    "tasks.js": "text/javascript",
    "main.js": "text/javascript",
    "icon.svg": "image/svg+xml",
}
_SECURITY = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

log = logging.getLogger("a2a.console")
KEEPALIVE = 15.0
_LIMITS = ("maxTurns", "maxDurationMs", "maxFailures", "maxTokensBudget")
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SHOWN_CALLS = 1000


def console_app(sessions: Sessions, feed: Feed, auth: ConsoleAuth, jaeger: Jaeger | None = None) -> Any:
    def visible(event: Event, user: str) -> bool:
        if event.kind == "agents":
            return True
        return event.user == user or (auth.open and event.kind == "call")

    async def page(request: Request) -> Response:
        if auth.user_of(request) is None:
            return HTMLResponse("<p>This console needs a token: open /login?token=...</p>", status_code=401)
        return HTMLResponse((STATIC / "console.html").read_text(), headers=_SECURITY)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _FILES:
            return Response(status_code=404)
        return Response((STATIC / name).read_bytes(), media_type=_FILES[name], headers=_SECURITY)

    async def login(request: Request) -> Response:
        token = request.query_params.get("token", "")
        if auth.open or auth.user_for_token(token) is None:
            return HTMLResponse("<p>Unknown token.</p>", status_code=401 if not auth.open else 404)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https"
        )
        return response

    async def state(request: Request, user: str) -> Response:
        mine = [session_row(s) for s in await sessions.sessions(user)]
        mine_only = not auth.open
        calls = [call_row(r, jaeger) for r in feed.calls if not mine_only or r.user_id == user]
        running = [call_row(r, jaeger) for r in feed.still_running() if not mine_only or r.user_id == user]
        agents = [agent_row(p) for p in sorted(feed.agents, key=lambda p: (p.name, p.agent_id))]
        return reply(
            {
                "user": user,
                "agents": agents,
                "sessions": mine,
                "calls": calls[-SHOWN_CALLS:],
                "running": running,
                "traces": jaeger is not None,
                "now": int(time.time() * 1000),
            }
        )

    async def policy(request: Request, user: str) -> Response:
        try:
            local = validate_name("local agent", request.path_params["local"])
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None
        p = await sessions.policy(user, local)
        allowed = p.allowed_shared_device_ids if p.allow_shared_agent_calls else []
        return reply({"local": local, "allowShared": p.allow_shared_agent_calls, "remotes": allowed})

    async def events(request: Request, user: str) -> Response:
        async def stream() -> Any:
            with feed.listen() as queue:
                yield b": connected\n\n"
                while True:
                    with anyio.move_on_after(KEEPALIVE) as idle:
                        event = await queue.receive()
                    if idle.cancelled_caught:
                        yield b": keep-alive\n\n"
                        continue
                    if not visible(event, user):
                        continue
                    data = event.data
                    if event.kind == "call":
                        data = call_row(data, jaeger)
                    elif event.kind == "session":
                        data = session_row(data)
                    yield f"event: {event.kind}\ndata: ".encode() + msgspec.json.encode(data) + b"\n\n"

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def start(request: Request, user: str) -> Response:
        body = await body_of(request)
        try:
            limits = msgspec.convert({k: body[k] for k in _LIMITS if k in body}, Limits)
        except msgspec.ValidationError as exc:
            raise InvalidParams(str(exc)) from None
        session = await sessions.start(
            user_id=user,
            profile_id=text_field(body, "local"),
            remote=text_field(body, "remote"),
            objective=text_field(body, "objective"),
            mode=text_field(body, "mode", "manual"),  # type: ignore[arg-type]
            limits=limits,
        )
        return reply(session_row(session), 201)

    async def one(request: Request, user: str) -> Response:
        return reply(session_row(await sessions.get(request.path_params["id"], user)))

    async def control(request: Request, user: str) -> Response:
        body = await body_of(request)
        text = body.get("text")
        if text is not None and not isinstance(text, str):
            raise InvalidParams("text must be a string")
        done = await apply_control(
            sessions, request.path_params["id"], user, request.path_params["action"], text
        )
        row = session_row(done.session)
        if done.notice is not None:
            row["notice"] = done.notice
            row["setAside"] = done.set_aside
        return reply(row)

    app = Starlette(
        routes=[
            Route("/", page),
            Route("/login", login),
            Route("/static/{name}", static),
            Route("/api/state", for_user(auth, state)),
            Route("/api/events", for_user(auth, events)),
            Route("/api/sessions", for_user(auth, start), methods=["POST"]),
            Route("/api/sessions/{id}", for_user(auth, one)),
            Route("/api/sessions/{id}/{action}", for_user(auth, control), methods=["POST"]),
            Route("/api/policies/{local}", for_user(auth, policy)),
            *task_routes(TaskView(feed.runtime.tasks), auth),
        ]
    )
    return app if not auth.open else _LoopbackOnly(app)


class _LoopbackOnly:
    """Without credentials the console answers only requests addressed to a loopback name, so a
    web page cannot reach it through a name of its own that resolves to 127.0.0.1 (DNS rebinding)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            name = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
            if name not in _LOOPBACK:
                response = PlainTextResponse("this console answers on 127.0.0.1 or localhost only", 421)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
