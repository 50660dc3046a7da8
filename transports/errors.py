"""Errors raised by transports.

    TransportError
    ├── TransportClosed      the connection is closed for good
    ├── NotConnected         the connection is down and cannot buffer this publish
    └── MessageTooLarge      the message exceeds the server's max_payload

The bus maps these to A2A errors in one place; transports never raise A2A errors.
"""

from __future__ import annotations

__all__ = ["MessageTooLarge", "NotConnected", "TransportClosed", "TransportError"]


class TransportError(Exception):
    """A message could not be handed to the message server."""


class TransportClosed(TransportError):
    """The transport was closed."""


class NotConnected(TransportError):
    """The transport is reconnecting and its outbound buffer cannot take this message."""


class MessageTooLarge(TransportError):
    """The message is larger than the server accepts."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"message of {size} bytes exceeds the {limit}-byte limit")
        self.size = size
        self.limit = limit
