"""The caller's objective rule: in progress, or answered within the window, is a loop."""

from __future__ import annotations

import time

import pytest

from a2a.core import objectives
from a2a.core.objectives import Objectives
from a2a.errors import CycleDetected
from bus.handoff import Delegation
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope


def request(objective: str, conversation: str = "c1") -> RequestEnvelope:
    return RequestEnvelope(
        message_id="m",
        source_agent_id="prime",
        target_agent_id="byte",
        conversation_id=conversation,
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="task"),
        metadata=Metadata(timestamp=0, correlation_id="r", ttl_ms=1000),
        delegation=Delegation(task="t", objective=objective),
    )


def test_in_progress_then_answered_then_forgotten_after_the_window() -> None:
    held = Objectives(window=0.2)
    key = held.start(request("extract receipt"), "byte")
    with pytest.raises(CycleDetected, match="in progress"):
        held.start(request("extract receipt"), "byte")
    held.end(key)
    held.done(key)
    with pytest.raises(CycleDetected, match="answered already"):
        held.start(request("extract receipt"), "byte")
    held.end(held.start(request("analyze document"), "byte"))  # another objective
    held.end(held.start(request("extract receipt", conversation="c2"), "byte"))  # another conversation
    held.end(held.start(request("extract receipt"), "tag"))  # another agent
    time.sleep(0.25)
    held.end(held.start(request("extract receipt"), "byte"))


def test_a_failed_objective_may_be_retried_and_a_zero_window_keeps_nothing() -> None:
    held = Objectives(window=60)
    key = held.start(request("extract receipt"), "byte")
    held.end(key)  # not answered: a retry is no loop
    held.end(held.start(request("extract receipt"), "byte"))
    off = Objectives(window=0)
    key = off.start(request("extract receipt"), "byte")
    off.end(key)
    off.done(key)
    off.end(off.start(request("extract receipt"), "byte"))


def test_it_remembers_a_bounded_number_the_oldest_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objectives, "DONE_KEPT", 3)
    held = Objectives(window=60)
    for n in range(4):
        key = held.start(request(f"goal {n}"), "byte")
        held.end(key)
        held.done(key)
    held.end(held.start(request("goal 0"), "byte"))  # the oldest was forgotten
    for n in (1, 2, 3):
        with pytest.raises(CycleDetected):
            held.start(request(f"goal {n}"), "byte")
