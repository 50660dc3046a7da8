"""A small HTTP health endpoint for orchestrators (Kubernetes liveness and readiness probes).

    GET /livez    200 while the runtime's heartbeat loop keeps ticking (the process is not wedged)
    GET /readyz   200 while NATS is connected and the registry took a heartbeat within 3 intervals
    GET /healthz  the full report; 200 when ready

Bodies are JSON. Enabled by ``a2a serve --health-port`` or ``A2A_HEALTH_PORT``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import SocketStream, TaskStatus

__all__ = ["Report", "serve_health"]

log = logging.getLogger("a2a.health")

_REASONS = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}


Report = Callable[[], dict[str, Any]]
"""Returns the health report: at least ``live`` and ``ready`` (booleans)."""


async def serve_health(
    report: Report,
    port: int,
    host: str = "0.0.0.0",
    *,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the health endpoints for ``report`` until cancelled; reports the bound port when started."""
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port, reuse_port=False)
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)
    log.info("health endpoint on http://%s:%d/healthz", host, bound)
    task_status.started(bound)

    async def handle(stream: SocketStream) -> None:
        async with stream:
            with anyio.move_on_after(5):
                request = b""
                while b"\r\n\r\n" not in request and len(request) < 8192:
                    try:
                        request += await stream.receive(4096)
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                path = request.split(b" ", 2)[1].decode(errors="replace") if request.count(b" ") >= 2 else "/"
                status, body = _answer(report(), path.split("?", 1)[0])
                payload = json.dumps(body).encode()
                head = (
                    f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
                ).encode()
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.send(head + payload)

    async with listener:
        await listener.serve(handle)


def _answer(report: dict[str, Any], path: str) -> tuple[int, dict[str, Any]]:
    if path == "/livez":
        return (200 if report["live"] else 503), {"live": report["live"]}
    if path == "/readyz":
        return (200 if report["ready"] else 503), {"ready": report["ready"]}
    if path in ("/healthz", "/"):
        return (200 if report["ready"] else 503), report
    return 404, {"error": f"no such endpoint: {path}"}
