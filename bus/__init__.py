"""The message-bus adapter: envelopes, subjects, correlation, limits."""

from . import codec as codec
from . import errors as errors
from . import limits as limits
from . import wire as wire
from ._bus import ACK_HEADER as ACK_HEADER
from ._bus import ALIVE_HEADER as ALIVE_HEADER
from ._bus import PROBE_HEADER as PROBE_HEADER
from ._bus import Bus as Bus
from ._bus import BusStats as BusStats
from ._bus import CancelNotice as CancelNotice
from ._pending import PendingCalls as PendingCalls
from .subjects import Subjects as Subjects
from .subjects import validate_name as validate_name

__all__ = [
    "ACK_HEADER",
    "ALIVE_HEADER",
    "PROBE_HEADER",
    "Bus",
    "BusStats",
    "CancelNotice",
    "PendingCalls",
    "Subjects",
    "codec",
    "errors",
    "limits",
    "validate_name",
    "wire",
]
