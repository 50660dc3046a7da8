"""Transports: how bytes travel between runtimes.

``NatsTransport`` is the production transport; ``MemoryTransport`` (with a
``MemoryBroker``) reproduces NATS delivery semantics in-process for unit tests.
"""

from ._match import subject_matches as subject_matches
from ._match import validate_subject as validate_subject
from ._nats import NatsOptions as NatsOptions
from ._nats import NatsTransport as NatsTransport
from .base import NO_RESPONDERS_STATUS as NO_RESPONDERS_STATUS
from .base import Message as Message
from .base import MessageHandler as MessageHandler
from .base import Subscription as Subscription
from .base import Taker as Taker
from .base import Transport as Transport
from .base import TransportEvents as TransportEvents
from .base import is_no_responders as is_no_responders
from .errors import MessageTooLarge as MessageTooLarge
from .errors import NotConnected as NotConnected
from .errors import TransportClosed as TransportClosed
from .errors import TransportError as TransportError
from .memory import MemoryBroker as MemoryBroker
from .memory import MemoryMessage as MemoryMessage
from .memory import MemoryTransport as MemoryTransport

__all__ = [
    "NO_RESPONDERS_STATUS",
    "MemoryBroker",
    "MemoryMessage",
    "MemoryTransport",
    "Message",
    "MessageHandler",
    "MessageTooLarge",
    "NatsOptions",
    "NatsTransport",
    "NotConnected",
    "Subscription",
    "Taker",
    "Transport",
    "TransportClosed",
    "TransportError",
    "TransportEvents",
    "is_no_responders",
    "subject_matches",
    "validate_subject",
]
