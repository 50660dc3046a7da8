"""What a handler's failure goes back as, for a call's reply and a durable task's outcome alike."""

from __future__ import annotations

from bus.errors import A2AError, AgentError

from ..delegation.redact import Redactor

__all__ = ["MAX_ERROR_CHARS", "as_failure"]

MAX_ERROR_CHARS = 2000
"""A handler's error message is cut to this many characters before it is redacted and sent."""


def as_failure(exc: Exception, redactor: Redactor) -> A2AError:
    """``exc`` as the typed error a caller gets: an A2A error raised here (by a handler or a
    check: it may quote secrets) with its message cut and redacted, one that came from a
    callee as it is, and any other exception as AGENT_ERROR with its redacted text."""
    if isinstance(exc, A2AError):
        if not exc.remote:
            exc.message = redactor.redact(exc.message[:MAX_ERROR_CHARS])
        return exc
    return AgentError(redactor.redact(str(exc)[:MAX_ERROR_CHARS]) or type(exc).__name__)
