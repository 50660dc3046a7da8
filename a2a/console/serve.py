"""Running the console next to a runtime and its sessions."""

from __future__ import annotations

import logging
from functools import partial

import anyio
import anyio.abc

from ..core.runtime import Runtime
from ..sessions import Sessions
from ..web import ReadLimits, bind_socket, serve_app
from .app import console_app
from .auth import ConsoleAuth
from .feed import Feed
from .links import Jaeger

__all__ = ["serve_console"]

log = logging.getLogger("a2a.console")


async def serve_console(
    runtime: Runtime,
    sessions: Sessions,
    *,
    host: str = "127.0.0.1",
    port: int = 8470,
    auth: ConsoleAuth | None = None,
    limits: ReadLimits | None = None,
    jaeger: Jaeger | None = None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the console until cancelled; reports the bound port. Its sessions adopt those of
    the console's users whose owner is gone.

    ``limits`` bound how long a request may take to arrive (default :class:`ReadLimits`).
    ``jaeger``: where calls link to their traces (default: ``A2A_JAEGER_URL``, none if unset).

    Raises:
        ValueError: a host other than loopback without credentials (anyone could steer sessions).
    """
    auth = auth or ConsoleAuth()
    if auth.open and host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"the console on {host} needs credentials: set A2A_CONSOLE_TOKENS")
    sessions.serve(*auth.users)
    feed = Feed(runtime, sessions.store)
    async with anyio.create_task_group() as tg:
        await tg.start(feed.run)
        app = console_app(sessions, feed, auth, jaeger or Jaeger.from_env())
        sock = bind_socket(host, port)
        # Its streams (server-sent events) never end by themselves: they are closed after 1 s.
        port = await tg.start(partial(serve_app, app, sock, limits=limits, shutdown_timeout=1))
        log.info("console on http://%s:%s (%s)", host, port, "open" if auth.open else "authenticated")
        task_status.started(port)
