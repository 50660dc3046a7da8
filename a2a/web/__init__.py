"""Serving an ASGI app from a process that owns its own shutdown (the gateway, the console)."""

from .deadlines import ReadLimits as ReadLimits
from .server import QuietServer as QuietServer
from .server import bind_socket as bind_socket
from .server import serve_app as serve_app
from .server import uvicorn_config as uvicorn_config

__all__ = ["QuietServer", "ReadLimits", "bind_socket", "serve_app", "uvicorn_config"]
