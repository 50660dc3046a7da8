"""What the runtime keeps: audit records (JetStream), conversation history and summaries (Redis)."""

from .audit import AuditFilter as AuditFilter
from .audit import AuditLog as AuditLog
from .audit import AuditRecord as AuditRecord
from .audit import read_audit as read_audit
from .capture import HistoryRecorder as HistoryRecorder
from .history import HistoryStore as HistoryStore
from .history import Interaction as Interaction
from .summary import Summariser as Summariser
from .summary import SummaryInput as SummaryInput
from .summary import summarise as summarise

__all__ = [
    "AuditFilter",
    "AuditLog",
    "AuditRecord",
    "HistoryRecorder",
    "HistoryStore",
    "Interaction",
    "Summariser",
    "SummaryInput",
    "read_audit",
    "summarise",
]
