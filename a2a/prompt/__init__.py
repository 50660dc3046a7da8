"""The local prompt channel (seed 001): its frames, and how long one turn may take.

Below both the stdio agents, which speak the channel to local programs (``a2a.stdio``),
and the sessions, which build the request frames of their turns (``a2a.sessions``).
"""

from .frames import PROMPT_SCHEMA as PROMPT_SCHEMA
from .frames import Constraints as Constraints
from .frames import HistoryTurn as HistoryTurn
from .frames import LocalPromptProgress as LocalPromptProgress
from .frames import LocalPromptRequest as LocalPromptRequest
from .frames import LocalPromptResponse as LocalPromptResponse
from .frames import bound_history as bound_history
from .turns import turn_seconds as turn_seconds

__all__ = [
    "PROMPT_SCHEMA",
    "Constraints",
    "HistoryTurn",
    "LocalPromptProgress",
    "LocalPromptRequest",
    "LocalPromptResponse",
    "bound_history",
    "turn_seconds",
]
