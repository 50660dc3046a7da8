"""Serving an ASGI app from a process that owns its own shutdown (the gateway, the console)."""

from .server import QuietServer as QuietServer
from .server import bind_socket as bind_socket
from .server import serve_app as serve_app

__all__ = ["QuietServer", "bind_socket", "serve_app"]
