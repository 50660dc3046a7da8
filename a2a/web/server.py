"""uvicorn on a socket bound here, without its signal handlers: the process decides when it stops.

Every server here bounds how long a request may take to arrive (:class:`ReadLimits`), and
runs under :func:`serve_app`, which starts it in a task group and stops it when cancelled.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import anyio.abc
import uvicorn

from .deadlines import ReadLimits, limited_protocol

__all__ = ["QuietServer", "bind_socket", "serve_app", "uvicorn_config"]


class QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers, telling when its startup is over."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.settled = anyio.Event()
        """Set when the startup has ended: the server accepts connections (``started``), or it failed."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.settled.set()


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
    sock: socket.socket,
    *,
    limits: ReadLimits | None = None,
    shutdown_timeout: float | None = None,
    before_stop: Callable[[], Awaitable[object]] | None = None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``sock`` until cancelled; reports the bound port once the server accepts connections.

    ``sock`` comes from :func:`bind_socket` (so a port in use is the caller's OSError, not
    uvicorn's exit) and is closed here. When cancelled, ``before_stop`` runs first, while
    the server still serves; then the server stops: open connections get ``shutdown_timeout``
    seconds to end (None: as long as they take), then their handlers and streams are cancelled.
    """
    try:
        host, port = sock.getsockname()[:2]
        limits = limits or ReadLimits()
        config = uvicorn_config(
            app, host=host, port=port, limits=limits, timeout_graceful_shutdown=shutdown_timeout
        )
        server = QuietServer(config)

        async def run() -> None:
            with anyio.CancelScope(shield=True):  # ends when told to, after before_stop
                await server.serve(sockets=[sock])

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                await server.settled.wait()
                if server.started:  # else the startup failed: run() raises it, which cancels this
                    task_status.started(port)
                await anyio.sleep_forever()
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        if before_stop is not None:
                            await before_stop()
                    finally:
                        server.should_exit = True  # the task group waits for the server to end
    finally:
        sock.close()
