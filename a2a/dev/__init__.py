"""Embedded development servers: nats-server and a Redis-compatible server, as child processes."""

from .servers import NatsServer as NatsServer
from .servers import RedisServer as RedisServer
from .servers import ServerError as ServerError
from .servers import free_port as free_port

__all__ = ["NatsServer", "RedisServer", "ServerError", "free_port"]
