"""Redaction of what a call sends: the parameters of requests, durable tasks and notifications.

The parameters of an agent's calls leave the process redacted unless redaction is turned
off, most specific choice first: the call's own ``redact_params``, then the calling agent's
(``Agent(..., redact_params=False)``), then the runtime's ``Settings.redact_params``
(``A2A_REDACT_PARAMS``, on by default). Calls from outside any agent (a user's script, the
CLI, the gateway) send the user's own parameters as given, unless the call asks. What was
hidden is counted by kind on the ``a2a.redactions`` metric.
"""

from __future__ import annotations

from typing import Any

from .services import Services

__all__ = ["ParamRedaction"]


class ParamRedaction:
    """Applies the runtime's redactor to outgoing parameters, where the choices say so."""

    __slots__ = ("default", "services")

    def __init__(self, services: Services, default: bool) -> None:
        self.services = services
        self.default = default

    def apply(
        self, params: dict[str, Any] | None, source: str, *choices: bool | None
    ) -> dict[str, Any] | None:
        """``params`` redacted (a copy) unless the first of ``choices`` that is not None, or
        else the runtime's default, is False; ``source`` is the agent (or client) sending.

        Strings change and stay strings, so the callee's schema check sees the same shape
        (see :meth:`a2a.Redactor.redact_params`); redacted parameters come back unchanged.
        """
        if not params:
            return params
        on = self.default
        for choice in choices:
            if choice is not None:
                on = choice
                break
        if not on:
            return params
        found: dict[str, int] = {}
        redacted = self.services.redactor.redact_params(params, found)
        if found:
            self.services.telemetry.redacted(source, found)
        return redacted
