"""External A2A agents on the bus: an HTTP client for the public A2A protocol, and a proxy.

``attach(runtime, url)`` reads a remote agent's card and serves it as an ordinary agent
whose actions are the remote's skills (``attach``); each call becomes an A2A task on the
remote (``proxy``), through a client that speaks JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3
(``client``, ``dialect``, ``interfaces``). Content mapping is in ``mapping``, task
outcomes in ``progress``, error mapping in ``errors``, bounded reading of (compressed)
answers in ``body``, card signatures in ``signature``.
"""

from .attach import RemoteAgent, attach, capability_id, remote_agent
from .client import A2AClient, fetch_card
from .errors import MalformedResponse, RedirectRefused
from .interfaces import Endpoint, NoUsableInterface, card_location, choose_endpoint
from .mapping import DEFAULT_ACTION, request_message
from .progress import Progress, outcome
from .proxy import RemotePeer
from .signature import card_signature, load_card_key

__all__ = [
    "DEFAULT_ACTION",
    "A2AClient",
    "Endpoint",
    "MalformedResponse",
    "NoUsableInterface",
    "Progress",
    "RedirectRefused",
    "RemoteAgent",
    "RemotePeer",
    "attach",
    "capability_id",
    "card_location",
    "card_signature",
    "choose_endpoint",
    "fetch_card",
    "load_card_key",
    "outcome",
    "remote_agent",
    "request_message",
]
