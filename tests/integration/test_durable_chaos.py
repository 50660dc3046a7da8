"""Short forms of ``a2a bench --chaos``: durable tasks while instances, and nats-server
itself, are SIGKILLed and restarted. Every accepted task ends once, with one stored
outcome, its side effect counted at most once (exactly once when it completed).

The full runs (1,000 tasks, 60 s of kills, and the 3-node cluster) are the benchmark's:
``a2a bench --chaos [--scenario instances|server|cluster]``.
"""

from __future__ import annotations

from typing import Any

import pytest

from a2a.bench.chaos import ChaosConfig, run_chaos

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow]


def redelivered(report: dict[str, Any]) -> int:
    """Tasks whose handler started more than once: kills that landed mid-handler."""
    return sum(count for starts, count in report["handler_starts_per_task"].items() if int(starts) > 1)


def test_instances_killed_every_few_seconds_lose_no_task_and_run_no_effect_twice() -> None:
    # A kill every 0.8 to 2 s over 8 s: at least three kills, as with 1 to 3 s over 12 s.
    config = ChaosConfig(scenario="instances", tasks=100, seconds=8, kill_every=(0.8, 2.0), drain=30)
    report = run_chaos(config)
    assert report["broken"] == [], report
    assert report["accepted"] == 100 and report["stuck"] == 0
    assert sum(report["outcomes"].values()) == 100
    assert set(report["outcomes"]) <= {"completed", "EFFECT_IN_DOUBT"}, report["outcomes"]
    assert report["effects_by_outcome"]["completed"] == {"1": report["outcomes"]["completed"]}
    assert report["more_than_one_stored_result"] == 0 and report["keys_moved"] == 0
    assert report["kills"]["instances"] >= 3
    assert redelivered(report) > 0  # the kills really interrupted handlers


def test_nats_server_killed_and_restarted_on_its_store_loses_no_accepted_task() -> None:
    report = run_chaos(ChaosConfig(scenario="server", tasks=60, seconds=7, drain=30))
    assert report["broken"] == [], report
    assert report["kills"]["server"]["down_s"] >= 2
    assert report["accepted"] == 60 and report["stuck"] == 0 and report["outcome_gone"] == 0
    assert report["effects_over_once"] == 0 and report["jobs_with_effects_over_once"] == 0


def test_an_effect_run_outside_the_journal_is_caught_running_twice() -> None:
    """The control: the same run with the effect called bare breaks the guarantee, and the
    harness says so (it does not pass whatever happens)."""
    config = ChaosConfig(
        scenario="instances", tasks=60, seconds=6, kill_every=(0.5, 1.0), after=(0.5, 1.0), journal=False
    )
    report = run_chaos(config)
    assert not report["ok"]
    assert report["effects_over_once"] > 0
    assert any("more than once" in line for line in report["broken"])
