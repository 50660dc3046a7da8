"""What a view follows of the registry, and the copies of one event on several of its channels."""

from __future__ import annotations

from discovery import MemoryRegistryServer
from discovery._interest import MAX_FOLLOWED, Copies, Interest


def _interest() -> Interest:
    return Interest(MemoryRegistryServer().connect(namespace="ns"), everything=False)


def test_new_capabilities_and_agents_are_followed_once_each() -> None:
    interest = _interest()
    keys = interest.keys
    assert interest.channels() == [] and not interest.covers(["a"])
    new = interest.add(["a", "b"], ["w"])
    assert new is not None and new.channels() == [
        keys.capability_events("a"),
        keys.capability_events("b"),
        keys.agent_events("w"),
    ]
    assert interest.covers(["b", "a"], ["w"]) and not interest.covers(["c"])
    assert interest.add(["a"]) is None
    again = interest.add(["a", "c"])
    assert again is not None and again.channels() == [keys.capability_events("c")]


def test_past_the_limit_or_when_widened_everything_is_followed() -> None:
    interest = _interest()
    interest.add([f"c{i}" for i in range(MAX_FOLLOWED)])
    new = interest.add(["one-more"])
    assert new is not None and new.everything and interest.everything
    assert interest.channels() == [interest.keys.events] and interest.covers(["anything"])
    assert interest.add(["x"]) is None and interest.widen() is None
    other = _interest()
    widened = other.widen()
    assert widened is not None and widened.channels() == [other.keys.events]


def test_copies_of_one_event_on_other_channels_are_recognised() -> None:
    copies = Copies()
    assert not copies.seen(b"cap:a", b"e1")
    assert copies.seen(b"cap:b", b"e1") and copies.seen(b"agent:w", b"e1")
    # The same bytes again on a channel that already had them: a new event (a repeat).
    assert not copies.seen(b"cap:a", b"e1")
    assert not copies.seen(b"cap:a", b"e2") and copies.seen(b"cap:b", b"e2")
