"""What the runtime keeps: audit records (JetStream) and conversation history (Redis)."""

from .audit import AuditFilter as AuditFilter
from .audit import AuditLog as AuditLog
from .audit import AuditRecord as AuditRecord
from .audit import read_audit as read_audit
from .history import HistoryStore as HistoryStore
from .history import Interaction as Interaction

__all__ = ["AuditFilter", "AuditLog", "AuditRecord", "HistoryStore", "Interaction", "read_audit"]
