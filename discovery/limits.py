"""How large a registry entry may be: checked when an instance registers and when a view reads one.

Any agent may write its own instance hash, so without a bound one agent can make every
view hold (and every heartbeat hash) megabytes. The bounds are generous for a real
agent (a few dozen capabilities and a paragraph of description take a few KiB) and
small enough that a view of thousands of instances stays cheap:

==========================  =========  ====================================================
what                        at most    why
==========================  =========  ====================================================
profile JSON, as stored     64 KiB     the whole entry: one read never costs more
capabilities                256        each is a sorted-set entry in Redis and in every view
capability caps JSON        64 KiB     what the server-side functions decode
descriptions                4,096      characters, the profile's and each capability's
short texts                 256        characters: version, capability names, tool names,
                                       ``resources.memory``
tools per capability        64
metadata, as JSON           16 KiB     free-form: the runtime puts its id and action names
status, load, capacity,     64         bytes each, as Redis stores them
lastSeen
==========================  =========  ====================================================

Registering a profile over a bound raises :class:`EntryTooLarge` (a ValueError) before
anything is written; a view refuses a stored entry over a bound, counts it and warns at
a bounded rate. Redis-side, the registry's functions skip entries over the byte bounds
without sending them (``discovery._scripts``).
"""

from __future__ import annotations

import msgspec

from .profile import AgentProfile

__all__ = [
    "MAX_CAPABILITIES",
    "MAX_DESCRIPTION",
    "MAX_FIELD_BYTES",
    "MAX_INSTANCES",
    "MAX_METADATA_BYTES",
    "MAX_PROFILE_BYTES",
    "MAX_SHORT_TEXT",
    "MAX_TOOLS",
    "EntryTooLarge",
    "check_limits",
    "check_size",
]

MAX_PROFILE_BYTES = 64 * 1024
MAX_CAPABILITIES = 256
MAX_DESCRIPTION = 4096
MAX_SHORT_TEXT = 256
MAX_TOOLS = 64
MAX_METADATA_BYTES = 16 * 1024
MAX_FIELD_BYTES = 64
MAX_INSTANCES = 32
"""Live instances of one agent, when the roster's grant for it names no other maximum."""

_encoder = msgspec.json.Encoder()


class EntryTooLarge(ValueError):
    """A profile over one of the registry's size bounds; the message names the bound."""


def check_size(agent_id: str, size: int) -> None:
    """Raise EntryTooLarge when a profile's JSON of ``size`` bytes is over the bound."""
    if size > MAX_PROFILE_BYTES:
        raise EntryTooLarge(
            f"{agent_id}: profile of {size:,} bytes is over the registry's {MAX_PROFILE_BYTES:,}"
        )


def _text(agent_id: str, what: str, value: str | None, limit: int) -> None:
    if value is not None and len(value) > limit:
        raise EntryTooLarge(f"{agent_id}: {what} of {len(value):,} characters (at most {limit:,})")


def check_limits(profile: AgentProfile) -> None:
    """Raise EntryTooLarge unless every part of ``profile`` is within the registry's bounds.

    The profile's total JSON size is checked apart (:func:`check_size`), by whoever
    encodes or reads it.
    """
    agent_id = profile.agent_id[:MAX_SHORT_TEXT]
    if len(profile.capabilities) > MAX_CAPABILITIES:
        raise EntryTooLarge(
            f"{agent_id}: {len(profile.capabilities):,} capabilities (at most {MAX_CAPABILITIES})"
        )
    _text(agent_id, "version", profile.version, MAX_SHORT_TEXT)
    _text(agent_id, "description", profile.description, MAX_DESCRIPTION)
    for cap in profile.capabilities:
        what = f"capability {cap.id[:MAX_SHORT_TEXT]!r}"
        _text(agent_id, f"{what} name", cap.name, MAX_SHORT_TEXT)
        _text(agent_id, f"{what} description", cap.description, MAX_DESCRIPTION)
        if len(cap.required_tools) > MAX_TOOLS:
            tools = len(cap.required_tools)
            raise EntryTooLarge(f"{agent_id}: {what} needs {tools:,} tools (at most {MAX_TOOLS})")
        for tool in cap.required_tools:
            _text(agent_id, f"{what} tool name", tool, MAX_SHORT_TEXT)
        if cap.resources is not None:
            _text(agent_id, f"{what} resources.memory", cap.resources.memory, MAX_SHORT_TEXT)
    if profile.metadata:
        size = len(_encoder.encode(profile.metadata))
        if size > MAX_METADATA_BYTES:
            limit = MAX_METADATA_BYTES
            raise EntryTooLarge(f"{agent_id}: metadata of {size:,} bytes as JSON (at most {limit:,})")
