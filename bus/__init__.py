"""The delivery protocol: envelopes, subjects, limits, and both halves of a call.

caller.py   send, pending futures, resend after a reconnect, probe, withdraw
watch.py    probe rounds that end the calls of a dead callee (AGENT_LOST)
callee.py   an instance's subscriptions, probe answers, reply cache, acks, replies
held.py     a call an endpoint holds while its handler runs
callers.py  checks of the runtimes calling here; the calls of one that is gone stop
link.py     the transport as both halves use it: encoding, error translation, local delivery,
            reply batches
tasks.py    Workers (reusable tasks for handled messages) and TaskSet (tasks with an owner)
_bus.py     Bus, which composes them
"""

from . import codec as codec
from . import errors as errors
from . import limits as limits
from . import protocol as protocol
from . import wire as wire
from ._bus import Bus as Bus
from ._pending import PendingCalls as PendingCalls
from .callee import Endpoint as Endpoint
from .caller import Caller as Caller
from .caller import CallerStats as CallerStats
from .held import Held as Held
from .link import Link as Link
from .protocol import CancelNotice as CancelNotice
from .subjects import Subjects as Subjects
from .subjects import validate_name as validate_name
from .tasks import TaskSet as TaskSet
from .tasks import Workers as Workers

__all__ = [
    "Bus",
    "Caller",
    "CallerStats",
    "CancelNotice",
    "Endpoint",
    "Held",
    "Link",
    "PendingCalls",
    "Subjects",
    "TaskSet",
    "Workers",
    "codec",
    "errors",
    "limits",
    "protocol",
    "validate_name",
    "wire",
]
