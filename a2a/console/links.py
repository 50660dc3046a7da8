"""Links from a call to its trace in Jaeger, when the console is told where Jaeger's UI is.

Spans carry the attributes ``a2a.correlation_id`` (the call tree's id, the same on every
hop) and ``a2a.request_id`` (see :mod:`a2a.observability.telemetry`); an audit record has
no trace id, so a call links to Jaeger's search for its tree's spans by that tag, within
the minutes around the call. Jaeger searches one service at a time: ``A2A_JAEGER_SERVICE``
names it, ``{agent}`` standing for the agent that handled the call (a process serving one
agent is named after it; the default).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from ..stores.audit import AuditRecord

__all__ = ["Jaeger"]

log = logging.getLogger("a2a.console")

MARGIN_MS = 60_000
"""Milliseconds searched before a call started and after it ended."""


@dataclass(frozen=True, slots=True)
class Jaeger:
    url: str
    """The UI's base URL (``http://jaeger:16686``)."""
    service: str = "{agent}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Jaeger | None:
        """From ``A2A_JAEGER_URL`` and ``A2A_JAEGER_SERVICE``; None (logged) when unset or not an
        http(s) URL."""
        env = os.environ if env is None else env
        url = env.get("A2A_JAEGER_URL", "").strip()
        if not url:
            return None
        try:
            return cls.checked(url, env.get("A2A_JAEGER_SERVICE", "").strip() or "{agent}")
        except ValueError as exc:
            log.warning("A2A_JAEGER_URL: %s; calls are shown without links to their traces", exc)
            return None

    @classmethod
    def checked(cls, url: str, service: str = "{agent}") -> Jaeger:
        """Raises:
        ValueError: ``url`` is not an http(s) URL with a host and no credentials, or ``service``
            is empty."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http(s) URL")
        if parts.username or parts.password:
            raise ValueError("the URL holds credentials: the page would show them")
        if parts.query or parts.fragment:
            raise ValueError("give the UI's base URL, without a query or a fragment")
        if not service:
            raise ValueError("the service is empty")
        return cls(url.rstrip("/"), service)

    def link(self, r: AuditRecord) -> str:
        """Jaeger's search for the spans of ``r``'s call tree."""
        agent = r.target.split(",", 1)[0]
        ended = r.started_at + int(r.duration_ms)
        if r.outcome == "running":
            ended = max(ended, int(time.time() * 1000)) + 3600_000  # it may run a while yet
        tags = {"a2a.correlation_id": r.correlation_id or r.request_id}
        query = {
            "service": self.service.replace("{agent}", agent),
            "tags": json.dumps(tags, separators=(",", ":")),
            "start": (r.started_at - MARGIN_MS) * 1000,  # microseconds
            "end": (ended + MARGIN_MS) * 1000,
            "lookback": "custom",
            "limit": 20,
        }
        return f"{self.url}/search?{urlencode(query)}"
