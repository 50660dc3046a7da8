"""pytest plugin for the A2A TCK: every HTTP request carries ``A2A-Version: 1.0`` unless it names one.

A2A 1.0 clients must send the header (a request without it is read as 0.3), and the TCK
sends 1.0 method names without it. Loaded into the TCK's own pytest run with
``-p tck_a2a_version`` (this directory on ``PYTHONPATH``); it patches the two HTTP
clients the TCK uses, ``requests`` and ``httpx``, and leaves a header a test sets alone.
"""

from __future__ import annotations

from typing import Any

import httpx
import requests

HEADER, VERSION = "A2A-Version", "1.0"

_session_request = requests.Session.request
_client_send = httpx.Client.send
_async_send = httpx.AsyncClient.send


def _request(self: requests.Session, method: str, url: str, **kwargs: Any) -> Any:
    headers = dict(kwargs.get("headers") or {})
    if not any(name.lower() == HEADER.lower() for name in headers):
        headers[HEADER] = VERSION
    kwargs["headers"] = headers
    return _session_request(self, method, url, **kwargs)


def _send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
    request.headers.setdefault(HEADER, VERSION)
    return _client_send(self, request, **kwargs)


async def _asend(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
    request.headers.setdefault(HEADER, VERSION)
    return await _async_send(self, request, **kwargs)


requests.Session.request = _request  # type: ignore[method-assign]
httpx.Client.send = _send  # type: ignore[method-assign]
httpx.AsyncClient.send = _asend  # type: ignore[method-assign]
