"""Local programs that speak the prompt channel's NDJSON on stdio, served as bus agents.

``stdio_agent(name, command, pool=N)`` runs N processes of ``command`` behind one agent
(``peer``); each call becomes one ``desktop.local_prompt.request`` frame on a free
process's stdin and ends with its one ``desktop.local_prompt.response`` on stdout (the
frames are ``a2a.prompt``'s, which the sessions use too). One process (``channel``, with
the request in flight in ``pending``) takes one request at a time, read line by line
within bounds (``lines``); its stderr goes to the log and protocol violations are
counted, never fatal (``stats``). The pool (``pool``) restarts processes that exit, with
back-off, and after any error of its own; what to run is checked up front and started,
on Linux under a launcher that leaves nothing the program started behind (``process``,
``_guard``); timeouts, grace periods and bounds are in ``config``. ``a2a serve-stdio
NAME -- COMMAND ...`` serves one from the command line.
"""

from ..prompt.frames import PROMPT_SCHEMA as PROMPT_SCHEMA
from ..prompt.frames import Constraints as Constraints
from ..prompt.frames import HistoryTurn as HistoryTurn
from ..prompt.frames import LocalPromptProgress as LocalPromptProgress
from ..prompt.frames import LocalPromptRequest as LocalPromptRequest
from ..prompt.frames import LocalPromptResponse as LocalPromptResponse
from .config import StdioConfig as StdioConfig
from .config import turn_timeout as turn_timeout
from .peer import DEFAULT_ACTION as DEFAULT_ACTION
from .peer import RUN_SCHEMA as RUN_SCHEMA
from .peer import StdioPeer as StdioPeer
from .peer import stdio_agent as stdio_agent
from .pool import ProcessInfo as ProcessInfo
from .stats import StdioStats as StdioStats

__all__ = [
    "DEFAULT_ACTION",
    "PROMPT_SCHEMA",
    "RUN_SCHEMA",
    "Constraints",
    "HistoryTurn",
    "LocalPromptProgress",
    "LocalPromptRequest",
    "LocalPromptResponse",
    "ProcessInfo",
    "StdioConfig",
    "StdioPeer",
    "StdioStats",
    "stdio_agent",
    "turn_timeout",
]
