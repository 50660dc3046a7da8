"""An async A2A client over HTTP: fetch a card, then send, stream, subscribe to, get and cancel tasks.

::

    card, card_url = await fetch_card("https://agent.example")
    async with A2AClient(choose_endpoint(card, card_url), headers={"X-API-Key": key}) as client:
        answer = await client.send(message, timeout=30)           # a Task or a Message
        async with contextlib.aclosing(client.stream(message, timeout=30)) as events:
            async for event in events:                             # StreamResponse objects
                ...

It speaks JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3 (``dialect``). Every answer is bounded:
a body over ``max_body`` bytes or an SSE event over ``max_event`` characters is
PAYLOAD_TOO_LARGE, counted as it inflates (``body``: gzip and deflate are offered and read
in bounded steps, so a compression bomb costs no more memory than the limit). No redirect
is followed: a call answered with one, or a card fetch unless ``follow_redirects``, is
:class:`~.errors.RedirectRefused` naming the ``Location``. Every failure is a typed
:class:`bus.errors.A2AError` (``errors``): connection refused is NO_RESPONDERS, a timeout
DEADLINE_EXCEEDED, an answer that is not the protocol's JSON
:class:`~.errors.MalformedResponse`, an A2A error its typed equivalent.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import anyio
import httpx
import msgspec

from bus.errors import A2AError, DeadlineExceeded, PayloadTooLarge
from transports.a2a_http import (
    VERSION_HEADER,
    A2AProtocolError,
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageRequest,
    SSEDecoder,
    SSEError,
    SSEEvent,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    decode,
    parse_agent_card,
)
from transports.a2a_http.methods import SendMessageConfiguration

from .body import ACCEPT_ENCODING, iter_body, read_body
from .dialect import Dialect, HttpCall
from .errors import (
    MalformedResponse,
    from_http_status,
    from_protocol_error,
    from_transport_error,
    redirect_refused,
    redirect_target,
    remote_text,
)
from .interfaces import Endpoint, card_location, origin

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_MAX_EVENT", "MAX_REDIRECTS", "A2AClient", "fetch_card"]

DEFAULT_MAX_BODY = 8 << 20
"""Bytes of one answer body read at most."""
DEFAULT_MAX_EVENT = 8 << 20
"""Characters of one SSE event read at most."""
MAX_CARD = 1 << 20
"""Bytes of an agent card read at most."""
MAX_REDIRECTS = 5
"""Redirects a card fetch follows at most, when it follows any."""

T = TypeVar("T")


def _json(body: bytes | str, what: str) -> Any:
    try:
        return decode(body)
    except msgspec.DecodeError as exc:
        raise MalformedResponse(f"{what} is not JSON: {remote_text(str(exc), 'undecodable')}") from None


def _status_error(status: int, body: bytes, dialect: Dialect | None) -> A2AError:
    """The typed error of a non-2xx answer."""
    try:
        obj: Any = decode(body) if body else None
    except msgspec.DecodeError:
        obj = None
    said = None
    if isinstance(obj, dict):
        inner = obj.get("error")
        said = inner.get("message") if isinstance(inner, dict) else inner
    elif not obj and body:
        said = body[:200].decode(errors="replace")
    by_status = from_http_status(status, remote_text(said, "") or None)
    if by_status is not None:
        return by_status
    if dialect is None:
        return MalformedResponse(
            f"HTTP {status}: {remote_text(said, 'no message')}", details={"httpStatus": status}
        )
    error = dialect.error(status, obj)
    if said and error.message == f"HTTP {status}":  # no A2A error in the body: say what it said
        error.message = f"HTTP {status}: {remote_text(said, '')}"
    return from_protocol_error(error)


async def fetch_card(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    http: httpx.AsyncClient | None = None,
    follow_redirects: bool = False,
    any_origin: bool = False,
) -> tuple[AgentCard, str]:
    """The agent card at ``url`` (a base URL or the card's own URL) and the URL it came from.

    Reads 1.0, 0.3 and merged cards. A redirect is refused unless ``follow_redirects``; then
    at most :data:`MAX_REDIRECTS`, to http(s) URLs, and with ``headers`` only on the first
    URL's origin unless ``any_origin`` (the headers would go wherever a redirect points, and
    so would a card fetched there send them to its endpoint). Raises ValueError for a URL
    that is not http(s), and the typed errors of the module docstring otherwise.
    """
    location = first = card_location(url)
    owned = http is None
    client = http or httpx.AsyncClient()
    request_headers = {
        VERSION_HEADER: "1.0",
        "Accept": "application/json",
        "Accept-Encoding": ACCEPT_ENCODING,
        **(headers or {}),
    }
    try:
        with anyio.fail_after(timeout):
            for hop in range(MAX_REDIRECTS + 1):
                status, body, moved = await _get(client, location, request_headers, timeout)
                if moved is None:
                    break
                target = redirect_target(location, moved)
                why = _refusal(
                    first, target, hop, follow_redirects, keep_origin=bool(headers) and not any_origin
                )
                if why:
                    raise redirect_refused(location, status, target, why)
                location = target
    except httpx.HTTPError as exc:
        raise from_transport_error(exc, location) from None
    except TimeoutError as exc:
        if isinstance(exc, A2AError):
            raise
        raise DeadlineExceeded(f"no agent card from {location} within {timeout:g} s") from None
    finally:
        if owned:
            await client.aclose()
    if status != 200:
        error = _status_error(status, body, None)
        error.message = f"no agent card at {location}: {error.message}"
        raise error
    try:
        return parse_agent_card(_json(body, f"the agent card at {location}")), location
    except msgspec.ValidationError as exc:
        raise MalformedResponse(
            f"the agent card at {location} is invalid: {remote_text(str(exc), 'invalid')}"
        ) from None


async def _get(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str], timeout: float
) -> tuple[int, bytes, str | None]:
    """Status, bounded body and redirect ``Location`` (None when it is no redirect) of GET ``url``."""
    async with client.stream(
        "GET", url, headers=headers, timeout=timeout, follow_redirects=False
    ) as response:
        if response.is_redirect:
            return response.status_code, b"", response.headers["location"]
        return response.status_code, await read_body(response, MAX_CARD), None


def _refusal(first: str, target: str, hop: int, follow: bool, *, keep_origin: bool) -> str:
    """Why a card fetch does not follow a redirect to ``target``; empty when it does."""
    if not follow:
        return "redirects are not followed (allow them with follow_redirects, `--follow-redirects`)"
    if hop == MAX_REDIRECTS:
        return f"more than {MAX_REDIRECTS} redirects"
    try:
        to = origin(target)  # ValueError: a port out of range
    except ValueError:
        to = ("", "", None)
    if to[0] not in ("http", "https") or not to[1]:
        return "only redirects to http(s) URLs are followed"
    if keep_origin and to != origin(first):
        return "another origin would get the request's headers (allow it with any_origin, `--any-origin`)"
    return ""


class A2AClient:
    """Calls one endpoint of a remote A2A agent. Use as ``async with`` (or call :meth:`aclose`).

    Args:
        headers: added to every request (``{"X-API-Key": ...}``, ``{"Authorization": "Bearer ..."}``).
        http: an ``httpx.AsyncClient`` to share (then not closed here).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        headers: Mapping[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        max_event: int = DEFAULT_MAX_EVENT,
    ) -> None:
        self.endpoint = endpoint
        self.dialect = Dialect(endpoint)
        self.headers = dict(headers or {})
        self.max_body = max_body
        self.max_event = max_event
        self._owned = http is None
        self._http = http or httpx.AsyncClient()

    async def __aenter__(self) -> A2AClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()

    # -- operations ----------------------------------------------------------------------------

    async def send(
        self, message: Message, timeout: float, *, return_immediately: bool = False
    ) -> Task | Message:
        """``SendMessage``: the task (finished, or as it stands with ``return_immediately``) or a message."""
        request = SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=return_immediately)
        )
        call = self.dialect.send(request, stream=False)
        obj = await self._exchange(call, timeout)
        return self._decoded(functools.partial(self.dialect.send_result, obj, call.rpc_id))

    async def get(self, task_id: str, timeout: float) -> Task:
        """``GetTask``, without history."""
        history = None if self.endpoint.legacy else 0
        call = self.dialect.get(GetTaskRequest(id=task_id, history_length=history))
        obj = await self._exchange(call, timeout)
        return self._decoded(functools.partial(self.dialect.task_result, obj, call.rpc_id))

    async def cancel(self, task_id: str, timeout: float) -> Task:
        """``CancelTask``: the task as the remote left it."""
        call = self.dialect.cancel(CancelTaskRequest(id=task_id))
        obj = await self._exchange(call, timeout)
        return self._decoded(functools.partial(self.dialect.task_result, obj, call.rpc_id))

    async def stream(self, message: Message, timeout: float) -> AsyncGenerator[StreamResponse, None]:
        """``SendStreamingMessage``: the events as they come, until the remote closes the stream.

        ``timeout`` bounds connecting and each wait for data, and the stream ends with
        DEADLINE_EXCEEDED once that long has passed in all; callers close the iterator
        (``contextlib.aclosing``) when they stop early.
        """
        call = self.dialect.send(
            SendMessageRequest(message=message, configuration=SendMessageConfiguration()), stream=True
        )
        async for event in self._stream(call, timeout):
            yield event

    async def subscribe(self, task_id: str, timeout: float) -> AsyncGenerator[StreamResponse, None]:
        """``SubscribeToTask``: the events of a running task from now on, as :meth:`stream`."""
        async for event in self._stream(self.dialect.subscribe(SubscribeToTaskRequest(id=task_id)), timeout):
            yield event

    async def _stream(self, call: HttpCall, timeout: float) -> AsyncGenerator[StreamResponse, None]:
        deadline = time.monotonic() + timeout
        try:
            async with self._http.stream(
                call.method,
                call.url,
                content=call.body,
                headers=self._headers(call),
                timeout=timeout,
                follow_redirects=False,
            ) as response:
                ctype = response.headers.get("content-type", "")
                if response.status_code // 100 != 2 or not ctype.startswith("text/event-stream"):
                    # An error before the stream started, or a server answering with one document.
                    obj = await self._answer(response, call)
                    yield self._decoded(functools.partial(self.dialect.stream_event, obj, call.rpc_id))
                    return
                decoder = SSEDecoder(max_line=self.max_event, max_event=self.max_event)
                async for chunk in iter_body(response):
                    for event in self._events(decoder, chunk):
                        read = functools.partial(
                            self.dialect.stream_event,
                            _json(event.data, "an SSE event"),
                            call.rpc_id,
                            error=event.event == "error",
                        )
                        yield self._decoded(read)
                    if time.monotonic() > deadline:
                        raise DeadlineExceeded(f"the stream from {call.url} ran past its {timeout:g} s")
        except httpx.HTTPError as exc:
            raise from_transport_error(exc, call.url) from None

    async def probe(self, url: str, timeout: float) -> bool:
        """Whether the server at ``url`` (the card's URL) answers a GET within ``timeout``
        seconds with anything but a 5xx; the body is not read."""
        try:
            with anyio.fail_after(timeout):
                async with self._http.stream(
                    "GET", url, headers=self.headers, timeout=timeout, follow_redirects=False
                ) as response:
                    return response.status_code < 500
        except (httpx.HTTPError, TimeoutError):
            return False

    # -- plumbing ------------------------------------------------------------------------------

    def _headers(self, call: HttpCall) -> dict[str, str]:
        return {"Accept-Encoding": ACCEPT_ENCODING, **self.headers, **call.headers}

    async def _exchange(self, call: HttpCall, timeout: float) -> Any:
        """Make ``call`` and return its decoded JSON answer; non-2xx answers raise their typed error."""
        try:
            with anyio.fail_after(timeout):
                async with self._http.stream(
                    call.method,
                    call.url,
                    content=call.body,
                    params=call.query or None,
                    headers=self._headers(call),
                    timeout=timeout,
                    follow_redirects=False,
                ) as response:
                    return await self._answer(response, call)
        except httpx.HTTPError as exc:
            raise from_transport_error(exc, call.url) from None
        except TimeoutError as exc:
            if isinstance(exc, A2AError):
                raise
            raise DeadlineExceeded(f"no answer from {call.url} within {timeout:g} s") from None

    async def _answer(self, response: httpx.Response, call: HttpCall) -> Any:
        if response.is_redirect:
            target = redirect_target(call.url, response.headers["location"])
            why = "calls are not redirected (the card must name the endpoint's own URL)"
            raise redirect_refused(call.url, response.status_code, target, why)
        body = await read_body(response, self.max_body)
        if response.status_code // 100 != 2:
            raise _status_error(response.status_code, body, self.dialect)
        return _json(body, f"the answer from {call.url}")

    def _events(self, decoder: SSEDecoder, chunk: bytes) -> list[SSEEvent]:
        try:
            return decoder.feed(chunk)
        except SSEError as exc:
            if "longer" in str(exc) or "larger" in str(exc):
                raise PayloadTooLarge(f"the remote's stream broke a size limit: {exc}") from None
            raise MalformedResponse(f"the remote's stream is not SSE: {exc}") from None

    def _decoded(self, read: Callable[[], T]) -> T:
        """``read()``, with the remote's A2A error typed and a wrong shape a MalformedResponse."""
        try:
            return read()
        except A2AProtocolError as exc:
            raise from_protocol_error(exc) from None
        except (msgspec.ValidationError, msgspec.DecodeError, ValueError, TypeError) as exc:
            reason = remote_text(str(exc), "invalid")
            raise MalformedResponse(
                f"the remote's answer is not valid A2A {self.endpoint.version}: {reason}"
            ) from None
