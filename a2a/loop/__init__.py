"""An agent loop: any model that speaks seed 003's JSON actions, run inside a handler.

``call_agent`` delegates to a peer, ``tool_call`` uses a tool the agent was given (checked
against the roster), ``done`` and ``respond`` end the task; every failure goes back to the
model as an observation, and a loop that cannot end ends with a typed error.
"""

from .actions import CallAgent as CallAgent
from .actions import Done as Done
from .actions import ErrorNote as ErrorNote
from .actions import ModelAction as ModelAction
from .actions import Observation as Observation
from .actions import Respond as Respond
from .actions import ToolCall as ToolCall
from .actions import decode_action as decode_action
from .driver import AgentLoop as AgentLoop
from .driver import LoopConfig as LoopConfig
from .driver import LoopFailed as LoopFailed
from .driver import LoopOutcome as LoopOutcome
from .driver import Message as Message
from .driver import Model as Model
from .driver import Step as Step
from .driver import Tool as Tool
from .prompt import instructions as instructions
from .scripted import ScriptedModel as ScriptedModel

__all__ = [
    "AgentLoop",
    "CallAgent",
    "Done",
    "ErrorNote",
    "LoopConfig",
    "LoopFailed",
    "LoopOutcome",
    "Message",
    "Model",
    "Observation",
    "Respond",
    "ScriptedModel",
    "Step",
    "Tool",
    "ToolCall",
    "decode_action",
    "instructions",
]
