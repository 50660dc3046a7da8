"""Change events on the registry's channel, as the scripts in ``discovery._scripts`` publish them.

{"e": "reg", "id": ...}                                        registered or replaced
{"e": "st", "id": ..., "status", "load", "capacity", "ts"}     heartbeat (and "trust" when the
                                                               instance publishes one)
{"e": "down", "id": ...}                                       deregistered or swept
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from bus.subjects import is_name

from ._validate import DECODE_ERRORS, MAX_COUNTER, Invalid
from .profile import AgentProfile, AgentStatus, Trust

__all__ = ["KINDS", "Event", "load_only", "parse_event"]

KINDS = frozenset(("reg", "st", "down"))


Counter = Annotated[int, Meta(ge=0, le=MAX_COUNTER)]
"""Load and capacity: never negative, and small enough that their ratio is a float."""


class Event(msgspec.Struct):
    e: str
    id: str
    status: AgentStatus | None = None
    load: Counter | None = None
    capacity: Counter | None = None
    ts: float | None = None
    trust: Trust | None = None
    """Absent: the instance publishes no trust score (an agent of the deployment)."""


_decoder = msgspec.json.Decoder(Event)


def parse_event(raw: object) -> Event | None:
    """The event in a message's payload; None for a kind this code does not know.

    Raises:
        Invalid: the payload does not decode, or names no valid instance id.
    """
    if not isinstance(raw, (bytes, str)):
        raise Invalid("event", f"payload of type {type(raw).__name__}")
    try:
        event = _decoder.decode(raw)
    except DECODE_ERRORS as exc:
        raise Invalid("event", f"{exc}: {raw[:100]!r}") from None
    if event.e not in KINDS:
        return None  # a kind a newer writer sends: not ours to judge
    if not is_name(event.id):
        raise Invalid("event", f"instance id {event.id[:100]!r}")
    return event


def load_only(profile: AgentProfile, event: Event) -> bool:
    """Whether a state event changes nothing of an entry but its load."""
    return (
        event.status == profile.status
        and (event.capacity or 0) == profile.capacity
        and event.trust == profile.trust
    )
