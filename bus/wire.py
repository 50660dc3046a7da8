"""A2A wire types: msgspec Structs, JSON on the wire, camelCase keys.

The envelope is a tagged union on ``type`` (``request``, ``response``,
``notification``, ``error``); every variant carries the same fields, so code reads
them uniformly and ``match`` on the class tells what a message is. New fields always
get defaults, so older peers' envelopes keep decoding.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from ._struct import Wire
from .handoff import Delegation, Grants

__all__ = [
    "COMPACT_VERSION",
    "COMPACT_VERSIONS",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_HOPS",
    "DEFAULT_TTL_MS",
    "ELIDING_VERSION",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "Envelope",
    "ErrorEnvelope",
    "ErrorInfo",
    "Metadata",
    "NotificationEnvelope",
    "Orchestration",
    "Payload",
    "Priority",
    "RequestEnvelope",
    "ResponseEnvelope",
    "TokenUsage",
    "Wire",
]

# 1.0 is the seed envelope; 1.1 added deadline, depth, callChain and userId; 1.2 added
# budget, parentId, fan-out, grants, delegation, token usage, batchReplies and userGrant; 1.3 added
# requestId, and correlationId became the id of the whole call tree (before, each hop's own). All
# additions have defaults, so the seed version (1.0) and every one since decode into the same types.
# 1.4 is the same envelope in a compact form (short keys, replies that leave out what their request
# says: ``bus.compact``), sent only to peers known to read it; the full form stays 1.3. A 1.5
# reader also takes a compact request, notification or audit record whose conversationId is left
# out because it is the call tree's own id (``bus.compact``); such messages still say 1.4.
PROTOCOL_VERSION = "1.3"
"""The version of the full (camelCase JSON) form this runtime writes."""
COMPACT_VERSION = "1.4"
"""The version of the compact form (``bus.compact``)."""
ELIDING_VERSION = "1.5"
"""The version whose readers take compact messages without a conversationId that names the
call tree (``bus.compact``); ``auto`` sends the compact form only to them."""
COMPACT_VERSIONS = (COMPACT_VERSION, ELIDING_VERSION)
"""The versions a message in the compact form may name."""
SUPPORTED_VERSIONS: tuple[str, ...] = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5")

DEFAULT_MAX_HOPS = 10
DEFAULT_MAX_DEPTH = 5
DEFAULT_TTL_MS = 30_000

Priority = Literal["low", "normal", "high", "critical"]
NonEmpty = Annotated[str, Meta(min_length=1, max_length=256)]
Count = Annotated[int, Meta(ge=0)]


class ErrorInfo(Wire):
    """A typed error: stable ``code``, plain ``message``, where it happened."""

    code: NonEmpty
    message: str
    agent: str | None = None
    hop: int | None = None
    details: dict[str, Any] | None = None


class TokenUsage(Wire):
    """Tokens a hop consumed (seed 002's token_usage)."""

    prompt: Count = 0
    completion: Count = 0
    total: Count = 0


class Payload(Wire):
    action: Annotated[str, Meta(max_length=256)]
    parameters: dict[str, Any] | None = None
    result: Any = None
    error: ErrorInfo | None = None
    usage: TokenUsage | None = None


class Metadata(Wire):
    timestamp: Count
    """Creation time, milliseconds since the Unix epoch (informational)."""
    correlation_id: NonEmpty
    """The whole call tree's id: every hop a call leads to carries its first request's
    (seed 004: correlation ids propagate through hops)."""
    hop_count: Count = 0
    max_hops: Annotated[int, Meta(ge=1)] = DEFAULT_MAX_HOPS
    priority: Priority = "normal"
    ttl_ms: Count | None = None
    """Time left for this call when it was sent; the receiver derives its local deadline from it."""
    deadline: Count | None = None
    """Absolute deadline, ms since the epoch, by the sender's clock (for people and audit)."""
    depth: Count = 0
    max_depth: Annotated[int, Meta(ge=0)] = DEFAULT_MAX_DEPTH
    call_chain: list[str] = []
    """Agents the request passed through, origin first (cycle detection)."""
    budget: Count | None = None
    """Tokens this call and everything it delegates may still spend."""
    request_id: NonEmpty | None = None
    """This request's own id (its reply, its cancel, its audit record); a peer before 1.3
    sends none, and its correlation id, then one per hop, is the request's id."""
    parent_id: str | None = None
    """The request id of the request whose handler sent this one."""
    fan_out: Annotated[int, Meta(ge=1)] | None = None
    """How many calls of the same parent (this one included) were in flight when it was sent."""
    max_fan_out: Annotated[int, Meta(ge=1)] | None = None
    batch_replies: bool = False
    """The caller takes this call's reply in a batch with other replies to it (bus/protocol.py)."""

    @property
    def key(self) -> str:
        """The id that names this request: its request id, else (a peer before 1.3) its correlation id."""
        return self.request_id or self.correlation_id

    def answered(self, timestamp: int) -> Metadata:
        """The metadata of a reply to this request: its ids, hop count and limits, made at ``timestamp``."""
        return Metadata(
            timestamp=timestamp,
            correlation_id=self.correlation_id,
            request_id=self.request_id,
            hop_count=self.hop_count,
            max_hops=self.max_hops,
            depth=self.depth,
            max_depth=self.max_depth,
            priority=self.priority,
        )


class Orchestration(Wire):
    """Control metadata of a message an operator-driven session forwards (seed 001), kept
    out of the message's prose; the callee sees it, its own calls do not carry it on."""

    origin_agent_device_id: Annotated[str, Meta(max_length=256)]
    trace_id: Annotated[str, Meta(max_length=64)]
    hop_count: Count
    orchestrator_profile_id: Annotated[str, Meta(max_length=256)]


class _EnvelopeBase(Wire, tag_field="type"):
    message_id: NonEmpty
    source_agent_id: NonEmpty
    target_agent_id: NonEmpty | list[NonEmpty]
    payload: Payload
    metadata: Metadata
    protocol_version: NonEmpty
    conversation_id: NonEmpty
    """After the fields the compact form always writes: there it may be left out (1.5)."""
    in_reply_to: str | None = None
    required_capabilities: list[str] | None = None
    user_id: Annotated[str, Meta(max_length=256)] | None = None
    user_grant: Annotated[str, Meta(max_length=2048)] | None = None
    """Signed by an entry point: which user the call acts for (``a2a.core.grants``)."""
    grants: Grants | None = None
    delegation: Delegation | None = None
    orchestration: Orchestration | None = None


class RequestEnvelope(_EnvelopeBase, tag="request"):
    """Asks the target to run ``payload.action`` with ``payload.parameters``."""


class ResponseEnvelope(_EnvelopeBase, tag="response"):
    """Carries ``payload.result`` back to the requester."""


class NotificationEnvelope(_EnvelopeBase, tag="notification"):
    """One-way message; no reply is sent."""


class ErrorEnvelope(_EnvelopeBase, tag="error"):
    """Carries ``payload.error`` back to the requester."""


Envelope = RequestEnvelope | ResponseEnvelope | NotificationEnvelope | ErrorEnvelope
