"""uvicorn on a socket bound here, without its signal handlers: the process decides when it stops.

Every server here bounds how long a request may take to arrive (:class:`ReadLimits`).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.abc
import uvicorn

from .deadlines import ReadLimits, limited_protocol

__all__ = ["QuietServer", "bind_socket", "serve_app", "uvicorn_config"]


class QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready socket (a port in use is an OSError here, not uvicorn's exit)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: without it a response written in two parts waits
    # for the client's delayed ACK (about 40 ms per request).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def uvicorn_config(app: Any, *, host: str, port: int, limits: ReadLimits, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: quiet, no lifespan, requests bounded by ``limits``."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=limited_protocol(limits),
        log_level="warning",
        lifespan="off",
        access_log=False,
        **options,
    )


async def serve_app(
    app: Any,
    *,
    host: str,
    port: int,
    limits: ReadLimits | None = None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` until cancelled; reports the bound port once the server accepts connections.

    Open streams (server-sent events) are closed when it stops.
    """
    config = uvicorn_config(
        app, host=host, port=port, limits=limits or ReadLimits(), timeout_graceful_shutdown=1
    )
    server = QuietServer(config)
    sock = bind_socket(host, port)
    stopped = anyio.Event()

    async def run() -> None:
        try:
            with anyio.CancelScope(shield=True):
                await server.serve(sockets=[sock])
        finally:
            stopped.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            while not server.started and not stopped.is_set():
                await anyio.sleep(0.01)
            task_status.started(sock.getsockname()[1])
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                server.should_exit = True
                with anyio.move_on_after(5):
                    await stopped.wait()
                sock.close()
