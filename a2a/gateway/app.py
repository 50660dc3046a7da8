"""The gateway: an ASGI app (Starlette, served by uvicorn) over a runtime connected to the bus.

Endpoints (``<base>`` is the gateway's root, or ``/agents/<name>`` for one agent):

    GET  /.well-known/agent-card.json                 the gateway's card (or the default agent's)
    GET  /agents/<name>/.well-known/agent-card.json   an agent's card (404 when none is live)
    POST <base>                                       JSON-RPC, 1.0 and 0.3 method names
    POST <base>/message:send | message:stream         HTTP+JSON 1.0
    GET  <base>/tasks/<id> | /tasks                   ...and the rest of the 1.0 routes
    GET  /.well-known/jwks.json                       the public key signing the cards (with a signer)
    GET  /healthz                                     liveness

A trailing slash names the same resource (``/agents/echo/`` is ``/agents/echo``): it is
served in place, never redirected, since clients do not follow a redirect of a POST.

On the root, a message that names no skill and no agent goes to the default agent
(``GatewayConfig.default_agent``, else the only live agent), as if it were sent to
``/agents/<name>``; with ``origin_card="agent"`` the root's card is that agent's card.

With a :class:`~a2a.gateway.signing.CardSigner` (``a2a gateway --card-key``) every card
carries a detached JWS in ``signatures`` and the JWKS names its public key.

Run it with :func:`serve_gateway` (or ``a2a gateway``); :func:`create_app` gives the bare
ASGI app for another server.

The interface URLs in cards come from configuration only: ``public_url``, else the address
the gateway is bound to; never from a request (its ``Host`` or forwarding headers), so one
client cannot point the cards others read, or a cache in front of them, anywhere else.
"""

from __future__ import annotations

import logging
import socket
from contextlib import closing
from functools import partial
from typing import Any

import anyio
import anyio.abc
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bus.subjects import validate_name
from discovery.profile import AgentProfile
from transports import Message as BusMessage
from transports.a2a_http.jsonrpc import Operation
from transports.a2a_http.rest import ROUTES_V1

from ..core.runtime import Runtime
from ..stores.audit import decode_records
from ..web import ReadLimits, bind_socket, serve_app
from .auth import Authenticator
from .cards import agent_card, gateway_card, profiles_by_name
from .config import GatewayConfig
from .http_common import Served
from .http_jsonrpc import handle_jsonrpc
from .http_rest import handle_rest
from .runs import show_hop
from .service import GatewayService
from .signing import JWKS_PATH, CardSigner, SignedCards
from .tasks import TaskStore

__all__ = ["create_app", "serve_gateway"]

log = logging.getLogger("a2a.gateway")

MAX_BODY = 1 << 20
"""Bytes of one request body."""


def _profiles(runtime: Runtime) -> list[AgentProfile]:
    view = runtime.view
    return [entry.profile for entry in view.entries()] if view is not None else []


def _not_modified(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 weak comparison: ``*`` or any listed tag equal to ``etag`` once ``W/`` is dropped."""
    if not if_none_match:
        return False
    tags = [t.strip() for t in if_none_match.split(",")]
    return "*" in tags or etag.removeprefix("W/") in {t.removeprefix("W/") for t in tags}


def _no_agent() -> Response:
    return JSONResponse({"error": {"code": 404, "status": "NOT_FOUND", "message": "no such agent"}}, 404)


def _not_live(name: str) -> Response:
    message = f"the agent {name} this card describes is not live"
    return JSONResponse({"error": {"code": 503, "status": "UNAVAILABLE", "message": message}}, 503)


class _SlashFree:
    """ASGI middleware: a path's trailing slashes are dropped before routing (``/`` stays)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        raw: bytes | None = scope.get("raw_path")
        # An encoded slash (``%2F``) at the end is part of a name, not a trailing slash.
        trailing = path != "/" and path.endswith("/") and (raw is None or raw.endswith(b"/"))
        if scope["type"] == "http" and trailing:
            scope = {**scope, "path": path.rstrip("/") or "/"}
            if raw is not None:
                scope["raw_path"] = raw.rstrip(b"/") or b"/"
        await self.app(scope, receive, send)


def _agent(request: Request) -> str | None:
    name = request.path_params.get("agent")
    if name is None:
        return None
    try:
        return validate_name("agent", name)
    except ValueError:
        return ""


def _jwks(signer: CardSigner) -> Any:
    keys = signer.jwks()

    async def endpoint(request: Request) -> Response:
        return JSONResponse(keys, headers={"Cache-Control": "max-age=300"})

    return endpoint


def bound_url(host: str, port: int) -> str:
    """The base URL of a gateway bound to ``host``:``port`` (a wildcard address names this machine)."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def create_app(
    served: Served,
    runtime: Runtime,
    config: GatewayConfig,
    *,
    base_url: str | None = None,
    card_signer: CardSigner | None = None,
) -> Starlette:
    """The ASGI app serving ``served`` (the service must be running).

    Cards name ``config.public_url``, else ``base_url`` (where the server is bound);
    ``card_signer`` signs them.

    Raises:
        ValueError: neither is given.
    """
    url = (config.public_url or base_url or "").rstrip("/")
    if not url:
        raise ValueError("the gateway's cards need a URL: set public_url")
    card_body = SignedCards(card_signer, jku=url + JWKS_PATH)

    def card_response(request: Request, body: bytes, etag: str) -> Response:
        headers = {"ETag": etag, "Cache-Control": "max-age=10"}
        if _not_modified(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    async def own_card(request: Request) -> Response:
        profiles = _profiles(runtime)
        if config.origin_card == "agent":
            assert config.default_agent is not None  # GatewayConfig checks it
            instances = profiles_by_name(profiles).get(config.default_agent)
            if not instances:
                return _not_live(config.default_agent)
            card = agent_card(config.default_agent, url, instances, served.auth)
        else:
            card = gateway_card(
                config.name, config.description, url, profiles, served.auth, config.default_agent
            )
        return card_response(request, *card_body(card))

    async def one_card(request: Request) -> Response:
        name = _agent(request)
        instances = profiles_by_name(_profiles(runtime)).get(name or "")
        if not name or not instances:
            return _no_agent()
        card = agent_card(name, f"{url}/agents/{name}", instances, served.auth)
        return card_response(request, *card_body(card))

    async def jsonrpc(request: Request) -> Response:
        agent = _agent(request)
        if agent == "":
            return _no_agent()
        return await handle_jsonrpc(request, served, agent)

    def rest(op: Operation) -> Any:
        async def endpoint(request: Request) -> Response:
            agent = _agent(request)
            if agent == "":
                return _no_agent()
            return await handle_rest(request, served, op, agent, request.path_params.get("task_id"))

        return endpoint

    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "replica": served.service.replica, "running": len(served.service.runs)}
        )

    routes = [
        Route("/.well-known/agent-card.json", own_card, methods=["GET"]),
        *([Route(JWKS_PATH, _jwks(card_signer), methods=["GET"])] if card_signer else []),
        Route("/agents/{agent}/.well-known/agent-card.json", one_card, methods=["GET"]),
        Route("/healthz", health, methods=["GET"]),
        Route("/", jsonrpc, methods=["POST"]),
        Route("/agents/{agent}", jsonrpc, methods=["POST"]),
    ]
    for prefix in ("", "/agents/{agent}"):
        for r in ROUTES_V1:
            path = prefix + r.path.replace("{id}", "{task_id}")
            routes.append(Route(path, rest(r.operation), methods=[r.method]))
    app = Starlette(routes=routes, middleware=[Middleware(_SlashFree)])
    app.router.redirect_slashes = False  # an unknown path is a 404, never a redirect
    return app


async def _watch_hops(runtime: Runtime, service: GatewayService) -> Any:
    """Audit records of hops below running tasks become working-status updates on their streams."""

    async def on_record(msg: BusMessage) -> None:
        if not service.runs:
            return
        for record in decode_records(msg.data, msg.subject):
            if record.depth < 1:
                continue  # the gateway's own call: its outcome is the task's
            text = f"{record.origin} -> {record.target}.{record.action}: {record.outcome}"
            if record.error_code:
                text += f" ({record.error_code})"
            hop = {
                "origin": record.origin,
                "target": record.target,
                "action": record.action,
                "outcome": record.outcome,
                "depth": record.depth,
                "hop": record.hop,
                "durationMs": record.duration_ms,
            }
            show_hop(service.runs.values(), record, text, {"hop": hop})

    return await runtime.subscribe_audit(on_record)


async def serve_gateway(
    runtime: Runtime,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    config: GatewayConfig | None = None,
    auth: Authenticator | None = None,
    card_signer: CardSigner | None = None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the bus agents of ``runtime`` over A2A until cancelled; reports the bound port.

    The runtime must be open and have a registry (tasks live in Redis). ``card_signer``
    signs the agent cards and has its public key served at ``/.well-known/jwks.json``.
    """
    config = config or GatewayConfig()
    auth = auth or Authenticator()
    if runtime.registry is None:
        raise ValueError("the gateway keeps tasks in Redis: configure REDIS_URL")
    if not auth.open and runtime.grants is None and runtime.settings.require_grants:
        raise ValueError("the gateway signs user grants: set A2A_GRANT_SEED")
    if runtime.view is not None:  # the gateway lists every agent: its view holds them all
        await runtime.view.follow_all()
    store = TaskStore(runtime.registry.redis, runtime.settings.namespace, ttl=config.task_ttl)
    service = GatewayService(runtime, store, config)
    served = Served(service, auth, MAX_BODY)
    limits = ReadLimits(header_timeout=config.header_timeout, body_timeout=config.body_timeout)
    sock = bind_socket(host, port)  # here, so that a port in use is an OSError, not uvicorn's exit
    bound = sock.getsockname()[1]
    if config.public_url is None and host in ("", "0.0.0.0", "::"):
        log.warning("the gateway listens on every address: set its public URL, which cards name")
    app = create_app(served, runtime, config, base_url=bound_url(host, bound), card_signer=card_signer)
    # Told to stop, the server serves on while the service lets its running tasks end.
    serve = partial(serve_app, app, sock, limits=limits, before_stop=partial(service.stop, config.stop_grace))
    subscription = None
    try:
        with closing(sock):  # serve_app closes it too; this covers a service that fails to start
            async with anyio.create_task_group() as tg:
                await tg.start(service.run)
                await tg.start(service.push.sender.run)
                subscription = await _watch_hops(runtime, service) if runtime.audit.enabled else None
                await tg.start(serve)
                log.info(
                    "A2A gateway on http://%s:%s (%s)", host, bound, "open" if auth.open else "authenticated"
                )
                task_status.started(bound)
    finally:
        if subscription is not None:
            with anyio.CancelScope(shield=True):
                await subscription.unsubscribe()
