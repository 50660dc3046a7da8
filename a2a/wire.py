"""The wire objects: envelopes, their payloads, delegation hand-offs, registry profiles, audit records.

msgspec Structs, JSON on the wire with camelCase keys. ``schemas/`` holds the checked-in
JSON Schemas that :func:`wire_schemas` generates (``a2a schemas`` writes them); a test
fails when the two drift apart.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from bus.audit import AuditRecord as AuditRecord
from bus.audit import CompactAuditRecord
from bus.compact import CompactEnvelope, CompactReply
from bus.handoff import Artifact as Artifact
from bus.handoff import ChatMessage as ChatMessage
from bus.handoff import ContextFilter as ContextFilter
from bus.handoff import Delegation as Delegation
from bus.handoff import DelegationResult as DelegationResult
from bus.handoff import FilteredContext as FilteredContext
from bus.handoff import Grants as Grants
from bus.handoff import HandoffData as HandoffData
from bus.handoff import SourceRef as SourceRef
from bus.protocol import CancelNotice as CancelNotice
from bus.wire import PROTOCOL_VERSION as PROTOCOL_VERSION
from bus.wire import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
from bus.wire import Envelope as Envelope
from bus.wire import ErrorEnvelope as ErrorEnvelope
from bus.wire import ErrorInfo as ErrorInfo
from bus.wire import Metadata as Metadata
from bus.wire import NotificationEnvelope as NotificationEnvelope
from bus.wire import Payload as Payload
from bus.wire import Priority as Priority
from bus.wire import RequestEnvelope as RequestEnvelope
from bus.wire import ResponseEnvelope as ResponseEnvelope
from bus.wire import TokenUsage as TokenUsage
from discovery.profile import AgentCapability as AgentCapability
from discovery.profile import AgentProfile as AgentProfile

__all__ = [
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "WIRE_TYPES",
    "AgentCapability",
    "AgentProfile",
    "Artifact",
    "AuditRecord",
    "CancelNotice",
    "ChatMessage",
    "ContextFilter",
    "Delegation",
    "DelegationResult",
    "Envelope",
    "ErrorEnvelope",
    "ErrorInfo",
    "FilteredContext",
    "Grants",
    "HandoffData",
    "Metadata",
    "NotificationEnvelope",
    "Payload",
    "Priority",
    "RequestEnvelope",
    "ResponseEnvelope",
    "SourceRef",
    "TokenUsage",
    "wire_schemas",
]

WIRE_TYPES: dict[str, tuple[Any, str]] = {
    "envelope.schema.json": (Envelope, "A2A envelope (request, response, notification or error)"),
    "agent-profile.schema.json": (
        AgentProfile,
        "Agent instance profile in the capability registry",
    ),
    "audit-record.schema.json": (AuditRecord, "Audit record of one A2A exchange"),
    "cancel-notice.schema.json": (CancelNotice, "Notice that calls were withdrawn by their caller"),
    "envelope-compact.schema.json": (
        CompactEnvelope,
        "A2A envelope in the compact form of protocol 1.4 (request or notification; 1.5 lets c out)",
    ),
    "reply-compact.schema.json": (CompactReply, "Reply to a request in the compact form (protocol 1.4)"),
    "audit-record-compact.schema.json": (
        CompactAuditRecord,
        "Audit record of one A2A exchange, in the compact form of protocol 1.4 (1.5 lets c out)",
    ),
}


def wire_schemas() -> dict[str, str]:
    """File name -> JSON text of each wire object's schema (JSON Schema 2020-12)."""
    out = {}
    for name, (tp, title) in WIRE_TYPES.items():
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://a2a-runtime.dev/schemas/{PROTOCOL_VERSION}/{name}",
            "title": title,
            **msgspec.json.schema(tp),
        }
        out[name] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out
