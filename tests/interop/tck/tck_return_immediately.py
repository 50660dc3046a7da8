"""pytest plugin for the A2A TCK: every JSON-RPC ``SendMessage`` that does not say whether to
wait asks to return at once (``configuration.returnImmediately: true``).

Without it a send waits for the task to end (``returnImmediately`` is false by default,
A2A 1.0 §3.2.2), while the TCK's ``ListTasks``, continuation and cancel tests count on
the task still running when the send returns, as the TCK's own reference server let it.
``tck_run.py --return-immediately`` loads this (``-p tck_return_immediately``) to see
what those tests find when they get a running task. It patches how the TCK's HTTP
clients (``httpx`` and ``requests``) build a request from ``json=``; a configuration
that states ``returnImmediately`` or ``blocking`` is left alone.
"""

from __future__ import annotations

from typing import Any

import httpx
import requests

_build_request = httpx.Client.build_request
_async_build_request = httpx.AsyncClient.build_request
_session_request = requests.Session.request


def immediate(body: Any) -> Any:
    """``body`` asking to return at once, if it is a ``SendMessage`` that does not say."""
    if not isinstance(body, dict) or body.get("method") != "SendMessage":
        return body
    params = body.get("params")
    if not isinstance(params, dict):
        return body
    config = params.get("configuration")
    if config is None:
        config = {}
    if not isinstance(config, dict) or {"returnImmediately", "return_immediately", "blocking"} & set(config):
        return body
    return {**body, "params": {**params, "configuration": {**config, "returnImmediately": True}}}


def _build(self: httpx.Client, *args: Any, **kwargs: Any) -> httpx.Request:
    if "json" in kwargs:
        kwargs["json"] = immediate(kwargs["json"])
    return _build_request(self, *args, **kwargs)


def _abuild(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> httpx.Request:
    if "json" in kwargs:
        kwargs["json"] = immediate(kwargs["json"])
    return _async_build_request(self, *args, **kwargs)


def _request(self: requests.Session, method: str, url: str, **kwargs: Any) -> Any:
    if "json" in kwargs:
        kwargs["json"] = immediate(kwargs["json"])
    return _session_request(self, method, url, **kwargs)


httpx.Client.build_request = _build  # type: ignore[method-assign]
httpx.AsyncClient.build_request = _abuild  # type: ignore[method-assign]
requests.Session.request = _request  # type: ignore[method-assign]
