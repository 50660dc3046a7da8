"""Durable tasks: calls whose request, outcome and cancellation live in a durable store.

Both halves of the task protocol, beside the call protocol's: :class:`TaskClient` (the
caller half: submit once, wait for the outcome, cancel) and :class:`Taker` (the callee
half: take, run each attempt, store the outcome once, acknowledge), over the store
contract of :mod:`transports.durable`. An attempt's handler sees an :class:`Attempt`
(checkpoints, journaled side effects).
"""

from . import keys as keys
from .attempt import Attempt as Attempt
from .attempt import LocalAttempt as LocalAttempt
from .store import TaskStore as TaskStore
from .submit import TaskClient as TaskClient
from .take import RunAttempt as RunAttempt
from .take import Taker as Taker
from .wire import EffectRecord as EffectRecord
from .wire import QueuedTask as QueuedTask
from .wire import TaskEvent as TaskEvent
from .wire import TaskOutcome as TaskOutcome
from .wire import TaskRecord as TaskRecord

__all__ = [
    "Attempt",
    "EffectRecord",
    "LocalAttempt",
    "QueuedTask",
    "RunAttempt",
    "Taker",
    "TaskClient",
    "TaskEvent",
    "TaskOutcome",
    "TaskRecord",
    "TaskStore",
    "keys",
]
