"""Typed A2A errors. Every error has a stable ``code`` that travels on the wire.

    A2AError                                  (code varies; unknown codes decode to this)
    ├── NoResponders                          NO_RESPONDERS
    ├── DeadlineExceeded (TimeoutError)       DEADLINE_EXCEEDED
    ├── Cancelled                             CANCELLED
    ├── AgentLost                             AGENT_LOST
    ├── LimitExceeded
    │   ├── MaxHopsExceeded                   MAX_HOPS_EXCEEDED
    │   ├── MaxDepthExceeded                  MAX_DEPTH_EXCEEDED
    │   ├── CycleDetected                     CYCLE_DETECTED
    │   ├── FanOutExceeded                    FAN_OUT_EXCEEDED
    │   ├── BudgetExceeded                    BUDGET_EXCEEDED
    │   └── Overloaded                        OVERLOADED
    ├── PermissionDenied (PermissionError)    PERMISSION_DENIED
    ├── InvalidEnvelope (ValueError)          INVALID_ENVELOPE
    ├── InvalidParams (ValueError)            INVALID_PARAMS
    ├── UnsupportedVersion (ValueError)       UNSUPPORTED_VERSION
    ├── PayloadTooLarge (ValueError)          PAYLOAD_TOO_LARGE
    ├── UnknownAction (LookupError)           UNKNOWN_ACTION
    ├── NoCapableAgent (LookupError)          NO_CAPABLE_AGENT
    ├── Unavailable (ConnectionError)         UNAVAILABLE
    ├── InputRequired                         INPUT_REQUIRED
    ├── EffectInDoubt                         EFFECT_IN_DOUBT
    └── AgentError                            AGENT_ERROR

``agent`` and ``hop`` say where an error happened; ``details`` holds machine-readable
context (for example the failing ``field`` of an INVALID_ENVELOPE). Remote callers only
ever see ``code``, ``message`` and those fields, never a traceback or ``repr``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from .wire import ErrorInfo, TokenUsage

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


class A2AError(Exception):
    """Base of every error a call can end with."""

    code: ClassVar[str] = "AGENT_ERROR"
    remote: bool = False
    """True when the error arrived in a reply, i.e. the callee raised or refused it."""
    usage: TokenUsage | None = None
    """Tokens the failed call had consumed, when the callee reported them."""

    def __init__(
        self,
        message: str,
        *,
        agent: str | None = None,
        hop: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.agent = agent
        self.hop = hop
        self.details = details or {}

    def __str__(self) -> str:
        where = []
        if self.agent:
            where.append(f"at {self.agent}")
        if self.hop is not None:
            where.append(f"hop {self.hop}")
        suffix = f" ({', '.join(where)})" if where else ""
        return f"{self.code}: {self.message}{suffix}"

    def to_info(self) -> ErrorInfo:
        """The wire form of this error."""
        return ErrorInfo(
            code=self.code,
            message=self.message,
            agent=self.agent,
            hop=self.hop,
            details=self.details or None,
        )

    def located(self, agent: str, hop: int | None) -> A2AError:
        """Fill in where the error happened, unless already known; returns self."""
        if self.agent is None:
            self.agent = agent
        if self.hop is None:
            self.hop = hop
        return self


class NoResponders(A2AError):
    """Nobody subscribes to the target subject: the agent or instance is not running."""

    code = "NO_RESPONDERS"


class DeadlineExceeded(A2AError, TimeoutError):
    """No answer before the call's deadline."""

    code = "DEADLINE_EXCEEDED"


class Cancelled(A2AError):
    """The caller gave up or was cancelled, and the call was withdrawn."""

    code = "CANCELLED"


class AgentLost(A2AError):
    """The instance handling the call died mid-call; it may have done part of the work."""

    code = "AGENT_LOST"


class LimitExceeded(A2AError):
    """A safety limit refused the call."""


class MaxHopsExceeded(LimitExceeded):
    code = "MAX_HOPS_EXCEEDED"


class MaxDepthExceeded(LimitExceeded):
    code = "MAX_DEPTH_EXCEEDED"


class CycleDetected(LimitExceeded):
    code = "CYCLE_DETECTED"


class FanOutExceeded(LimitExceeded):
    code = "FAN_OUT_EXCEEDED"


class BudgetExceeded(LimitExceeded):
    code = "BUDGET_EXCEEDED"


class Overloaded(LimitExceeded):
    """The instance's queue is full; retry later or elsewhere."""

    code = "OVERLOADED"


class PermissionDenied(A2AError, PermissionError):
    code = "PERMISSION_DENIED"


class InvalidEnvelope(A2AError, ValueError):
    """The message is not a valid A2A envelope; ``details['field']`` names the first bad field."""

    code = "INVALID_ENVELOPE"


class InvalidParams(A2AError, ValueError):
    """Parameters fail the action's input schema; ``details['path']`` locates the failure."""

    code = "INVALID_PARAMS"


class UnsupportedVersion(A2AError, ValueError):
    """protocolVersion is not accepted; ``details['supported']`` lists the accepted ones."""

    code = "UNSUPPORTED_VERSION"


class PayloadTooLarge(A2AError, ValueError):
    code = "PAYLOAD_TOO_LARGE"


class UnknownAction(A2AError, LookupError):
    code = "UNKNOWN_ACTION"


class NoCapableAgent(A2AError, LookupError):
    """No registered, live instance offers the required capabilities."""

    code = "NO_CAPABLE_AGENT"


class Unavailable(A2AError, ConnectionError):
    """The message server or registry cannot be reached."""

    code = "UNAVAILABLE"


class InputRequired(A2AError):
    """The agent stopped to ask for input (a LangGraph ``interrupt()``, an attached A2A
    agent's ``input-required``, say).

    ``details`` says what it asks (``interrupts``) and how to answer: call the same
    agent again with the details' ``resume`` parameters plus the answer, or, when they
    name a ``conversationId`` (an attached A2A agent, with its ``taskId`` and
    ``contextId``), with the answer in that conversation.
    """

    code = "INPUT_REQUIRED"


class EffectInDoubt(A2AError):
    """A durable task's side effect started in an earlier attempt and never recorded its end:
    whether it happened is unknown, so it is not run again (``details['effect']`` names it)."""

    code = "EFFECT_IN_DOUBT"


class AgentError(A2AError):
    """The handler raised; the message is the exception's text, never a traceback."""

    code = "AGENT_ERROR"


_BY_CODE: dict[str, type[A2AError]] = {
    cls.code: cls
    for cls in (
        NoResponders,
        DeadlineExceeded,
        Cancelled,
        AgentLost,
        MaxHopsExceeded,
        MaxDepthExceeded,
        CycleDetected,
        FanOutExceeded,
        BudgetExceeded,
        Overloaded,
        PermissionDenied,
        InvalidEnvelope,
        InvalidParams,
        UnsupportedVersion,
        PayloadTooLarge,
        UnknownAction,
        NoCapableAgent,
        Unavailable,
        InputRequired,
        EffectInDoubt,
        AgentError,
    )
}


def error_from_info(info: ErrorInfo) -> A2AError:
    """Rebuild the typed error from its wire form; unknown codes keep their code."""
    cls = _BY_CODE.get(info.code)
    err = (cls or A2AError)(info.message, agent=info.agent, hop=info.hop, details=info.details)
    if cls is None:
        err.code = info.code  # type: ignore[misc]
    err.remote = True
    return err


Outcome = Literal["ok", "error", "refused", "cancelled"]

_REFUSALS = (
    LimitExceeded,
    PermissionDenied,
    InvalidEnvelope,
    InvalidParams,
    UnknownAction,
    UnsupportedVersion,
)


def outcome_of(error: A2AError | None) -> Outcome:
    """How a call ended, for audit and metrics: ok, refused (a limit or bad input), cancelled, error."""
    if error is None:
        return "ok"
    if isinstance(error, Cancelled):
        return "cancelled"
    if isinstance(error, _REFUSALS):
        return "refused"
    return "error"
