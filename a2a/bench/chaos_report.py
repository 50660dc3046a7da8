"""What a chaos run observed, and the guarantees it checks against it.

The harness keeps, per job (one idempotency key): the task its submission was accepted
as, the outcome the submitter's waiter saw, and at the end the outcome a fresh runtime
reads by re-attaching by id and by submitting the key again. The worker processes count
what really happened in files of their own (:mod:`a2a.bench.chaos_agent`). A guarantee is
broken when:

- an accepted task never ended (stuck), or a job was never accepted;
- readers disagree on a task's outcome, or an outcome seen once is gone (two stored results);
- the key names another task at the end, or a new one;
- a side effect ran more than once for a task, or for a job (across tasks);
- a task completed although its effect did not run exactly once.

A task failed ``EFFECT_IN_DOUBT`` may have run its effect once or not at all: that is the
promise (at most once, and reported when unknown).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec

from bus.durable import TaskOutcome

__all__ = ["JobRecord", "render", "verdict"]

_encode = msgspec.json.Encoder().encode


@dataclass
class JobRecord:
    """One job of the run: what its submissions, its waiter and the final reads saw."""

    job: int
    key: str
    task_id: str | None = None
    """The task the submission was accepted as (None: never accepted)."""
    submit_errors: Counter[str] = field(default_factory=Counter)
    """Refused submission tries by error code (each retried with the same key)."""
    never_accepted: str | None = None
    """Why the job was given up on without a task."""
    submit_log: list[str] = field(default_factory=list)
    """The first refused tries, with the second of the run each happened at."""
    refused_at: list[float] = field(default_factory=list)
    """The second of the run of every refused try."""
    waited: TaskOutcome | None = None
    """The outcome the submitter's waiter saw (None: none before the run's end)."""
    follow_errors: Counter[str] = field(default_factory=Counter)
    """Errors waiting for the outcome raised (each followed by another wait)."""
    by_id: TaskOutcome | None = None
    """The outcome read at the end by a fresh runtime re-attached by id."""
    by_key_id: str | None = None
    """The task the idempotency key named at the end."""
    by_key_created: bool = False
    """Submitting the key again at the end created a task: the key was forgotten."""
    by_key: TaskOutcome | None = None


def label(outcome: TaskOutcome | None) -> str:
    """``completed``, the error code of a failure, ``cancelled``; ``stuck`` for no outcome."""
    if outcome is None:
        return "stuck"
    if outcome.state == "failed":
        return outcome.error.code if outcome.error is not None else "failed"
    return outcome.state


def _histogram(values: list[int]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(Counter(values).items())}


def verdict(jobs: list[JobRecord], events: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a run and the guarantees it broke (``broken``: empty when none)."""
    broken: list[str] = []
    accepted = [j for j in jobs if j.task_id is not None]
    never = [j for j in jobs if j.task_id is None]
    by_task: dict[str, Counter[str]] = {}
    effects_of_job: Counter[int] = Counter()
    for event in events:
        by_task.setdefault(str(event.get("task")), Counter())[str(event.get("kind"))] += 1
        if event.get("kind") == "effect":
            effects_of_job[int(event.get("job", -1))] += 1
    known = {j.task_id for j in accepted}

    outcomes: Counter[str] = Counter()
    matrix: dict[str, Counter[int]] = {}
    attempts: list[int] = []
    starts: list[int] = []
    twice_returned = stuck = late = doubles = vanished = keys_moved = 0
    for j in accepted:
        assert j.task_id is not None
        final = j.waited or j.by_id
        name = label(final)
        outcomes[name] += 1
        seen = by_task.get(j.task_id, Counter())
        matrix.setdefault(name, Counter())[seen["effect"]] += 1
        starts.append(seen["start"])
        twice_returned += seen["return"] > 1
        if final is None:
            stuck += 1
            continue
        attempts.append(final.attempt)
        late += j.waited is None
        read = [o for o in (j.waited, j.by_id, j.by_key if j.by_key_id == j.task_id else None) if o]
        doubles += len({_encode(o) for o in read}) > 1
        vanished += j.waited is not None and j.by_id is None
        keys_moved += j.by_key_id != j.task_id or j.by_key_created
        if name == "completed" and seen["effect"] != 1:
            broken.append(f"task {j.task_id} completed with its effect counted {seen['effect']} times")
        said = final.result.get("attempt") if isinstance(final.result, dict) else final.attempt
        if name == "completed" and said != final.attempt:
            broken.append(f"task {j.task_id}: its result names attempt {said}, its outcome {final.attempt}")
    refused = [at for j in jobs for at in j.refused_at]
    # A failure other than EFFECT_IN_DOUBT after the effect ran: the caller is not told it did.
    failed_after_effect = {
        code: counts[1] for code, counts in matrix.items() if code not in ("completed", "EFFECT_IN_DOUBT")
    }
    over = {t: c["effect"] for t, c in by_task.items() if c["effect"] > 1}
    over_jobs = {n: c for n, c in effects_of_job.items() if c > 1}
    orphans = sorted(t for t in by_task if t not in known)

    if stuck:
        broken.append(f"{stuck} accepted task(s) never ended")
    if never:
        broken.append(f"{len(never)} job(s) never accepted: {never[0].never_accepted}")
    if doubles:
        broken.append(f"{doubles} task(s) read with different outcomes (more than one stored result)")
    if vanished:
        broken.append(f"{vanished} task(s) whose outcome was seen and is gone")
    if keys_moved:
        broken.append(f"{keys_moved} idempotency key(s) name another task at the end, or a new one")
    if over:
        broken.append(f"{len(over)} task(s) ran their effect more than once: {sorted(over.items())[:5]}")
    if over_jobs:
        broken.append(f"{len(over_jobs)} job(s) ran their effect in more than one task")
    submit_errors = sum((j.submit_errors for j in jobs), Counter[str]())
    follow_errors = sum((j.follow_errors for j in jobs), Counter[str]())
    return {
        "jobs": len(jobs),
        "accepted": len(accepted),
        "never_accepted": len(never),
        "outcomes": dict(sorted(outcomes.items())),
        "stuck": stuck,
        "ended_after_the_wait": late,
        "more_than_one_stored_result": doubles,
        "outcome_gone": vanished,
        "keys_moved": keys_moved,
        "effects_by_outcome": {k: _histogram(list(v.elements())) for k, v in sorted(matrix.items())},
        "effects_over_once": len(over),
        "failed_after_effect": {code: n for code, n in failed_after_effect.items() if n},
        "jobs_with_effects_over_once": len(over_jobs),
        "attempts_of_outcome": _histogram(attempts),
        "handler_starts_per_task": _histogram(starts),
        "handler_returned_twice": twice_returned,
        "tasks_run_not_accepted": len(orphans),
        "submit_errors": dict(submit_errors),
        "submit_error_examples": sorted({line.split("s ", 1)[1] for j in jobs for line in j.submit_log})[:5],
        "submits_refused_s": [round(min(refused), 2), round(max(refused), 2)] if refused else [],
        "never_accepted_examples": [{"job": j.job, "tries": j.submit_log} for j in never[:3]],
        "follow_errors": dict(follow_errors),
        "broken": broken,
        "ok": not broken,
    }


def render(report: dict[str, Any]) -> str:
    """The report as text: the scenario, the figures, then every broken guarantee."""
    r = report
    lines = [
        f"chaos run: scenario {r['scenario']}, {r['jobs']} tasks, {r['seconds']:g} s of kills, "
        f"seed {r['seed']}, ack wait {r['ack_wait']:g} s",
        f"  kills: {r['kills']}",
        f"  accepted {r['accepted']}, never accepted {r['never_accepted']}, "
        f"submit errors {r['submit_errors']} (between {r['submits_refused_s']} s into the run)",
        f"  outcomes: {r['outcomes']}   (stuck: {r['stuck']})",
        f"  effects counted per task, by outcome: {r['effects_by_outcome']}",
        f"  effects over once: {r['effects_over_once']} tasks, {r['jobs_with_effects_over_once']} jobs; "
        f"failed (not in doubt) after the effect ran: {r['failed_after_effect']}",
        f"  more than one stored result: {r['more_than_one_stored_result']}, "
        f"outcomes gone: {r['outcome_gone']}, keys moved: {r['keys_moved']}",
        f"  attempt that ended each task: {r['attempts_of_outcome']}",
        f"  handler starts per task: {r['handler_starts_per_task']}, "
        f"returned twice: {r['handler_returned_twice']}, run without being accepted: "
        f"{r['tasks_run_not_accepted']}",
        f"  waiter errors: {r['follow_errors']}",
        f"  wall time {r['wall_s']:.1f} s (chaos {r['chaos_s']:.1f} s, drain {r['drain_s']:.1f} s)",
    ]
    for message in r["submit_error_examples"]:
        lines.append(f"  a refused submission: {message}")
    for example in r["never_accepted_examples"]:
        lines.append(f"  job {example['job']} never accepted; its first tries:")
        lines += [f"    {line}" for line in example["tries"]]
    for note in r.get("notes", []):
        lines.append(f"  note: {note}")
    if r["broken"]:
        lines.append("GUARANTEES BROKEN:")
        lines += [f"  - {b}" for b in r["broken"]]
    else:
        lines.append("every guarantee held")
    return "\n".join(lines)
