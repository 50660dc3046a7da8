"""JSON Schemas of the wire objects, generated from the msgspec types.

``schemas/`` holds the checked-in output of :func:`wire_schemas` (``a2a schemas``
writes it); a test fails when the two drift apart.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from bus import CancelNotice
from bus.wire import PROTOCOL_VERSION, Envelope
from discovery.profile import AgentProfile

from .audit import AuditRecord

__all__ = ["WIRE_TYPES", "wire_schemas"]

WIRE_TYPES: dict[str, tuple[Any, str]] = {
    "envelope.schema.json": (Envelope, "A2A envelope (request, response, notification or error)"),
    "agent-profile.schema.json": (
        AgentProfile,
        "Agent instance profile in the capability registry",
    ),
    "audit-record.schema.json": (AuditRecord, "Audit record of one A2A exchange"),
    "cancel-notice.schema.json": (CancelNotice, "Notice that calls were withdrawn by their caller"),
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
