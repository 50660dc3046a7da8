"""Operator-driven sessions (seed 001): a local agent drafts, a remote agent answers, a person steers.

``Sessions(runtime)`` starts and controls them (``manager``); the loop of one session
(``runner``) follows the state machine (``machine``) over the session's record in Redis
(``store``, ``model``), with the history bounded and summarised per turn (``bounds``) and
each send checked against the profile's policy, rate and concurrency (``policy``).
"""

from .manager import Sessions as Sessions
from .model import Ending as Ending
from .model import Limits as Limits
from .model import Session as Session
from .model import Turn as Turn
from .policy import SharedCallPolicy as SharedCallPolicy
from .store import AuditEntry as AuditEntry
from .store import NotFound as NotFound

__all__ = ["AuditEntry", "Ending", "Limits", "NotFound", "Session", "Sessions", "SharedCallPolicy", "Turn"]
