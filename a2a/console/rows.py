"""What the page gets of each thing it shows: JSON-ready rows of agents, calls and sessions.

Field names are the wire's (camelCase), every field present: the wire form leaves defaults
out, a page should not have to know them.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from discovery.profile import AgentProfile

from ..sessions.model import Session
from ..stores.audit import AuditRecord
from .links import Jaeger

__all__ = ["agent_row", "call_row", "session_row"]


def agent_row(p: AgentProfile) -> dict[str, Any]:
    return {
        "name": p.name,
        "instance": p.agent_id,
        "description": p.description,
        "capabilities": [c.id for c in p.capabilities],
        "status": p.status,
        "load": p.load,
        "capacity": p.capacity,
        "trust": 1.0 if p.trust is None else p.trust,
        "lastSeenSecondsAgo": round(max(0.0, time.time() - p.last_seen / 1000), 1),
        # A local program on the prompt channel: what a session's local agent is.
        "local": (p.metadata or {}).get("framework") == "stdio",
    }


def call_row(r: AuditRecord, jaeger: Jaeger | None = None) -> dict[str, Any]:
    """The record, with the link to its trace (``traceUrl``, None without Jaeger)."""
    row: dict[str, Any] = _whole(r)
    row["traceUrl"] = None if jaeger is None else jaeger.link(r)
    return row


def session_row(s: Session) -> dict[str, Any]:
    """The session, as its wire form."""
    row: dict[str, Any] = _whole(s)
    return row


def _whole(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        names = zip(value.__struct_fields__, value.__struct_encode_fields__, strict=True)
        return {wire: _whole(getattr(value, name)) for name, wire in names}
    if isinstance(value, list | tuple):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    return msgspec.to_builtins(value)
