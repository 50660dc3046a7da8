"""What the registry accepts from Redis: every field checked before a profile reaches routing.

Whoever can write to Redis (any agent, under the ACLs of ``a2a redis-config``: its own
instance hashes and the shared indexes) can put any bytes there. An entry is refused
unless its profile decodes, its id is a valid name, the profile's ``agentId`` is that
id, its ``name`` is the agent name the id starts with (so an agent's Redis user, which
may write only hashes of ids starting with its own name, cannot pass off an instance of
another agent), every capability id follows ``CAPABILITY_ID_PATTERN``, its status,
load and capacity are what a heartbeat writes, its trust (when it publishes one) is a
plain decimal in [0, 1], and it is within the size bounds of
``discovery.limits`` (the registry's functions answer an entry over the byte bounds with
its size instead of its bytes).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence

import msgspec

from bus.subjects import instance_agent, is_name

from .limits import MAX_FIELD_BYTES, EntryTooLarge, check_limits, check_size
from .profile import STATUSES, AgentProfile, AgentStatus, validate_capability_id

__all__ = [
    "DECODE_ERRORS",
    "FIELDS",
    "MAX_COUNTER",
    "TRUST_PATTERN",
    "Invalid",
    "check_profile",
    "parse_instance",
    "text",
    "trust",
]

DECODE_ERRORS = (msgspec.MsgspecError, ValueError, TypeError, RecursionError)
"""What decoding foreign bytes may raise: malformed or mistyped JSON, invalid UTF-8
(a ValueError), nesting deeper than the decoder's stack."""

_profile_decoder = msgspec.json.Decoder(AgentProfile)
MAX_COUNTER = 2**53
"""Load and capacity above this are not a real instance's."""
FIELDS = 6
"""Fields of one instance in a reply of the registry's functions: profile, status, load,
capacity, lastSeen, trust."""
TRUST_PATTERN = r"[0-9.]+"
"""A stored trust value: digits and a point only (no sign, exponent, NaN, infinity, hex or
space), as the writer formats it and as the server-side search accepts it."""
_TRUST = re.compile(TRUST_PATTERN)


class Invalid(ValueError):
    """A registry item that fails validation; ``kind`` is a short fixed word for counting."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


def text(value: str | bytes | int | None, kind: str) -> str:
    """A Redis reply field as text, or Invalid(kind)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise Invalid(kind, f"not UTF-8: {value[:60]!r}") from None
    raise Invalid(kind, "missing")


def counter(value: str | bytes | int | None, kind: str) -> int:
    """A non-negative integer field (missing counts 0), or Invalid(kind)."""
    if value is None:
        return 0
    if isinstance(value, (str, bytes)) and len(value) > MAX_FIELD_BYTES:
        raise Invalid(kind, f"{len(value):,} bytes")
    try:
        number = int(value)
    except (ValueError, TypeError):
        raise Invalid(kind, f"not an integer: {value!r:.40}") from None
    if not 0 <= number <= MAX_COUNTER:
        raise Invalid(kind, f"out of range: {number}")
    return number


def trust(value: str | bytes | int | None, kind: str = "trust") -> float | None:
    """A stored trust field (missing: None, the instance publishes none), or Invalid(kind)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) and len(value) > MAX_FIELD_BYTES:
        raise Invalid(kind, f"{len(value):,} bytes")
    raw = text(value, kind)
    try:
        number = float(raw) if _TRUST.fullmatch(raw) else math.nan
    except ValueError:  # more than one point
        number = math.nan
    if not 0.0 <= number <= 1.0:  # NaN fails too
        raise Invalid(kind, f"not a trust score in [0, 1]: {value!r:.40}")
    return number


def check_profile(profile: AgentProfile, agent_id: str) -> None:
    """Raise Invalid unless ``profile`` may stand for the instance ``agent_id``."""
    if not is_name(agent_id):
        raise Invalid("id", f"instance id {agent_id[:60]!r} is not a valid name")
    if profile.agent_id != agent_id:
        raise Invalid("id", f"profile of {profile.agent_id[:60]!r} stored as {agent_id!r}")
    if profile.name != instance_agent(agent_id):
        raise Invalid("name", f"{agent_id} claims to be an instance of {profile.name[:60]!r}")
    try:
        check_limits(profile)
    except EntryTooLarge as exc:
        raise Invalid("size", str(exc)) from None
    for capability in profile.capabilities:
        try:
            validate_capability_id(capability.id)
        except ValueError as exc:
            raise Invalid("capability", f"{agent_id}: {exc}") from None


def parse_instance(
    agent_id: str | bytes | int | None, fields: Sequence[str | bytes | int | None]
) -> AgentProfile:
    """An instance from its id and hash fields (profile, status, load, capacity, lastSeen, trust).

    Raises:
        Invalid: any field fails validation (the kind says which).
    """
    instance = text(agent_id, "id")
    if len(fields) != FIELDS:
        raise Invalid("profile", f"{instance}: {len(fields)} fields")
    profile_json, status, load, capacity, last_seen, trusted = fields
    if profile_json is None:
        raise Invalid("profile", f"{instance}: no profile")
    if isinstance(profile_json, int):  # the registry's functions send an oversized entry's size
        raise Invalid("size", f"{instance}: an entry field of {profile_json:,} bytes is over the bounds")
    try:
        check_size(instance, len(profile_json))
    except EntryTooLarge as exc:
        raise Invalid("size", str(exc)) from None
    try:
        profile = _profile_decoder.decode(profile_json)
    except DECODE_ERRORS as exc:
        raise Invalid("profile", f"{instance}: {exc}") from None
    check_profile(profile, instance)
    _share_strings(profile)
    state = text(status, "status")
    if state not in STATUSES:
        raise Invalid("status", f"{instance}: status {state[:40]!r}")
    profile.status = _status(state)
    profile.load = counter(load, "load")
    profile.capacity = counter(capacity, "load")
    profile.last_seen = counter(last_seen, "load")
    profile.trust = trust(trusted)  # the hash field, not what the profile JSON may claim
    return profile


def _share_strings(profile: AgentProfile) -> None:
    """Intern the strings replicas repeat (names, versions, descriptions, capability ids and categories).

    A view holds one profile per instance: instances of one agent then share these
    instead of each holding copies (about a third of an entry's memory).
    """
    profile.name = sys.intern(profile.name)
    profile.version = sys.intern(profile.version)
    profile.description = sys.intern(profile.description)
    for cap in profile.capabilities:
        cap.id = sys.intern(cap.id)
        cap.name = sys.intern(cap.name)
        cap.description = sys.intern(cap.description)
        cap.category = sys.intern(cap.category)  # type: ignore[assignment]  # interned, still the same literal


def _status(value: str) -> AgentStatus:
    return "available" if value == "available" else "busy" if value == "busy" else "offline"
