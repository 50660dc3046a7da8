"""The guarantees a chaos run checks, on made-up observations: each broken one is named."""

from __future__ import annotations

from typing import Any

from a2a.bench.chaos_report import JobRecord, render, verdict
from bus.durable import TaskOutcome
from bus.wire import ErrorInfo


def done(attempt: int = 1) -> TaskOutcome:
    return TaskOutcome(state="completed", result={"attempt": attempt}, attempt=attempt, finished_at=1)


def in_doubt(attempt: int = 2) -> TaskOutcome:
    error = ErrorInfo(code="EFFECT_IN_DOUBT", message="in doubt")
    return TaskOutcome(state="failed", error=error, attempt=attempt, finished_at=2)


def job(n: int, outcome: TaskOutcome | None, *, task: str | None = None) -> JobRecord:
    task_id = task or f"t{n}"
    return JobRecord(
        job=n, key=f"k{n}", task_id=task_id, waited=outcome, by_id=outcome, by_key_id=task_id, by_key=outcome
    )


def events(task: str, job: int, *kinds: str) -> list[dict[str, Any]]:
    return [{"kind": kind, "task": task, "job": job, "attempt": 1} for kind in kinds]


def test_a_clean_run_holds_every_guarantee() -> None:
    jobs = [job(0, done()), job(1, in_doubt()), job(2, in_doubt())]
    seen = (
        events("t0", 0, "start", "effect", "return")
        + events("t1", 1, "start", "effect", "start")  # killed after its count: in doubt, counted once
        + events("t2", 2, "start", "start")  # killed before its count: in doubt, never counted
    )
    report = verdict(jobs, seen)
    assert report["broken"] == [] and report["ok"]
    assert report["outcomes"] == {"EFFECT_IN_DOUBT": 2, "completed": 1}
    assert report["effects_by_outcome"] == {"EFFECT_IN_DOUBT": {"0": 1, "1": 1}, "completed": {"1": 1}}
    assert report["handler_starts_per_task"] == {"1": 1, "2": 2}


def broken(jobs: list[JobRecord], seen: list[dict[str, Any]]) -> str:
    report = verdict(jobs, seen)
    assert not report["ok"]
    return " | ".join(report["broken"])


def test_an_effect_counted_twice_is_caught() -> None:
    assert "more than once" in broken([job(0, done())], events("t0", 0, "effect", "effect"))


def test_an_effect_counted_twice_across_two_tasks_of_one_job_is_caught() -> None:
    seen = events("t0", 0, "effect") + events("orphan", 0, "effect")
    assert "more than one task" in broken([job(0, done())], seen)


def test_a_task_completed_without_its_effect_is_caught() -> None:
    assert "counted 0 times" in broken([job(0, done())], events("t0", 0, "start", "return"))


def test_a_task_that_never_ended_is_caught() -> None:
    assert "never ended" in broken([job(0, None)], [])


def test_a_job_never_accepted_is_caught() -> None:
    refused = JobRecord(job=0, key="k0", never_accepted="UNAVAILABLE: the store is away")
    assert "never accepted" in broken([refused], [])


def test_two_stored_outcomes_are_caught() -> None:
    record = job(0, done())
    record.by_id = in_doubt()
    assert "different outcomes" in broken([record], events("t0", 0, "effect"))


def test_an_outcome_seen_then_gone_is_caught() -> None:
    record = job(0, done())
    record.by_id = record.by_key = None
    assert "gone" in broken([record], events("t0", 0, "effect"))


def test_a_key_naming_a_new_task_is_caught() -> None:
    record = job(0, done())
    record.by_key_id, record.by_key_created = "t9", True
    assert "idempotency key" in broken([record], events("t0", 0, "effect"))


def test_the_text_report_names_what_broke() -> None:
    report = verdict([job(0, None)], [])
    report.update(
        scenario="instances", seconds=1, seed=1, ack_wait=1, kills={}, wall_s=1, chaos_s=1, drain_s=0
    )
    text = render(report)
    assert "GUARANTEES BROKEN" in text and "never ended" in text
