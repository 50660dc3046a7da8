"""The session state machine and the bounded history, without servers."""

from __future__ import annotations

import pytest

from a2a.errors import InvalidParams
from a2a.sessions import Session, Turn
from a2a.sessions.bounds import SUMMARY_CHARS, bounded, summarise
from a2a.sessions.machine import can_move, move
from a2a.stdio import Constraints, HistoryTurn

SEED = ["idle", "planning", "waiting_local", "ready_to_send", "waiting_remote", "processing_remote"]


def session(**fields: object) -> Session:
    return Session(id="s", user_id="u", profile_id="p", remote="r", objective="o", **fields)  # type: ignore[arg-type]


def test_the_seeds_path_is_allowed_and_recorded_in_order() -> None:
    s = session()
    for to in [*SEED[1:], "planning", "completed"]:
        s = move(s, to, f"to {to}")  # type: ignore[arg-type]
    assert [(t.source, t.to) for t in s.transitions][:3] == [
        ("idle", "planning"),
        ("planning", "waiting_local"),
        ("waiting_local", "ready_to_send"),
    ]
    assert s.state == "completed" and len(s.transitions) == 7


@pytest.mark.parametrize("state", SEED[1:])
def test_any_working_state_may_pause_stop_or_fail(state: str) -> None:
    assert all(can_move(state, to) for to in ("paused", "stopped", "error"))


@pytest.mark.parametrize("state", ["completed", "stopped", "error"])
def test_an_ended_session_goes_nowhere(state: str) -> None:
    with pytest.raises(InvalidParams):
        move(session(state=state), "planning")


def test_no_shortcut_past_the_send() -> None:
    assert not can_move("waiting_local", "waiting_remote")  # a draft is ready before it is sent
    assert not can_move("planning", "processing_remote")
    assert not can_move("paused", "processing_remote")  # a reply comes only after a send
    assert not can_move("paused", "paused")


def turns(n: int, size: int) -> list[Turn]:
    roles = ["local_agent", "remote_agent"]
    return [Turn(index=i, role=roles[i % 2], text=f"{i}:" + "w " * size, at=0.0) for i in range(n)]  # type: ignore[arg-type]


def test_history_within_bounds_keeps_the_latest_remote_message_apart_and_verbatim() -> None:
    history = turns(9, 500)  # the last one (index 8) is the local agent's
    remote, kept, summary = bounded(history, Constraints(max_history_turns=3, max_history_chars=3100))
    assert remote == history[7].text
    assert [t.text for t in kept] == [history[5].text, history[6].text, history[8].text]
    assert summary is not None and summary.startswith("5 earlier turns summarised:")
    assert bounded(history, Constraints(max_history_turns=3, max_history_chars=3100))[2] == summary


def test_nothing_is_summarised_when_everything_fits() -> None:
    assert bounded(turns(3, 2), Constraints())[2] is None


def test_a_summary_stays_within_its_size_whatever_it_summarises() -> None:
    many = [HistoryTurn(role="remote_agent", text="x" * 10_000) for _ in range(500)]
    summary = summarise(many)
    assert len(summary) <= SUMMARY_CHARS and summary.startswith("500 earlier turns summarised:")
    assert summarise(many) == summary
