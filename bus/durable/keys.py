"""The keys of a namespace's durable tasks in the store's bucket, named in one place.

    task.<id>                 TaskRecord (written once, when the task is accepted)
    outcome.<id>              TaskOutcome (written once: the first writer wins)
    cancel.<id>               set when the task is cancelled
    attempt.<id>.<n>          AttemptRecord of attempt n
    checkpoint.<id>           the handler's last checkpoint (JSON)
    effect.<id>.<hash>        EffectRecord of one named side effect
    key.<owner>.<hash>        the task id an idempotency key of that owner names

Ids are the runtime's hex ids; names and keys chosen by users are hashed, so every key is
a valid KV key whatever they contain.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "attempt",
    "cancel",
    "checkpoint",
    "effect",
    "idempotency",
    "outcome",
    "record",
]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def record(task_id: str) -> str:
    return f"task.{task_id}"


def outcome(task_id: str) -> str:
    return f"outcome.{task_id}"


def cancel(task_id: str) -> str:
    return f"cancel.{task_id}"


def attempt(task_id: str, n: int) -> str:
    return f"attempt.{task_id}.{n}"


def checkpoint(task_id: str) -> str:
    return f"checkpoint.{task_id}"


def effect(task_id: str, name: str) -> str:
    return f"effect.{task_id}.{_digest(name)}"


def idempotency(owner: str | None, key: str) -> str:
    return f"key.{_digest(owner or '')}.{_digest(key)}"
