# The tree is drawn once, where the errors are defined (bus/errors.py), and shown here too.
import bus.errors as _defined
from bus.errors import A2AError as A2AError
from bus.errors import AgentError as AgentError
from bus.errors import AgentLost as AgentLost
from bus.errors import BudgetExceeded as BudgetExceeded
from bus.errors import Cancelled as Cancelled
from bus.errors import CycleDetected as CycleDetected
from bus.errors import DeadlineExceeded as DeadlineExceeded
from bus.errors import EffectInDoubt as EffectInDoubt
from bus.errors import FanOutExceeded as FanOutExceeded
from bus.errors import InputRequired as InputRequired
from bus.errors import InvalidEnvelope as InvalidEnvelope
from bus.errors import InvalidParams as InvalidParams
from bus.errors import LimitExceeded as LimitExceeded
from bus.errors import MaxDepthExceeded as MaxDepthExceeded
from bus.errors import MaxHopsExceeded as MaxHopsExceeded
from bus.errors import NoCapableAgent as NoCapableAgent
from bus.errors import NoResponders as NoResponders
from bus.errors import Outcome as Outcome
from bus.errors import Overloaded as Overloaded
from bus.errors import PayloadTooLarge as PayloadTooLarge
from bus.errors import PermissionDenied as PermissionDenied
from bus.errors import Unavailable as Unavailable
from bus.errors import UnknownAction as UnknownAction
from bus.errors import UnsupportedVersion as UnsupportedVersion
from bus.errors import error_from_info as error_from_info
from bus.errors import outcome_of as outcome_of

__all__ = [
    "A2AError",
    "AgentError",
    "AgentLost",
    "BudgetExceeded",
    "Cancelled",
    "CycleDetected",
    "DeadlineExceeded",
    "EffectInDoubt",
    "FanOutExceeded",
    "InputRequired",
    "InvalidEnvelope",
    "InvalidParams",
    "LimitExceeded",
    "MaxDepthExceeded",
    "MaxHopsExceeded",
    "NoCapableAgent",
    "NoResponders",
    "Outcome",
    "Overloaded",
    "PayloadTooLarge",
    "PermissionDenied",
    "Unavailable",
    "UnknownAction",
    "UnsupportedVersion",
    "error_from_info",
    "outcome_of",
]

__doc__ = _defined.__doc__
