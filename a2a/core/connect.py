"""The runtime's NATS connection, as its settings describe it, telling the bus what happens;
and what a server that cannot be used is, said in one line.

A server that does not answer as NATS answers is looked at while the connection is still
being tried (:func:`listen_to`): one that turns out to speak another protocol (Redis, HTTP,
TLS from the first byte) ends the attempt at once, and when the time is up, what was seen
(nothing listening, a silent server, one that requires TLS) is the reason given.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import anyio

from bus import Bus
from bus.subjects import inbox_prefix
from transports import NatsOptions, NatsTransport, TransportError, TransportEvents

from .settings import Settings

__all__ = ["LOOK_AFTER", "Heard", "bus_events", "connect_nats", "listen_to", "tls_context"]

LOOK_AFTER = 0.15
"""Seconds a first connection may take before the servers are looked at (most take a few ms)."""
_LISTEN = 0.5  # seconds a look at one server may take
_SHOWN = 60  # characters of what a server said, quoted in a reason
_OTHER_PROTOCOL = frozenset(("redis", "http", "tls", "other"))


class Heard(NamedTuple):
    """What a server said when spoken to (:func:`listen_to`).

    ``kind``: ``nats``, ``redis``, ``http``, ``tls`` (TLS from the first byte), ``other`` (a
    protocol of its own), ``silent``, ``closed`` (without a word), ``refused`` or ``unreachable``.
    """

    kind: str
    said: str
    """The server's first words (printable), or the reason it could not be reached."""
    info: dict[str, Any] | None = None
    """A NATS server's INFO."""

    def describe(self, expected: str) -> str:
        """Why the server is no ``expected`` one (``NATS``, ``Redis``), in words."""
        heard = f"{self.said!r}" if self.said else "nothing"
        return {
            "refused": "connection refused: nothing listens there",
            "unreachable": f"unreachable: {self.said}",
            "silent": f"the server accepted the connection but answered nothing: is it a {expected} server?",
            "closed": f"the server closed the connection without a word: is it a {expected} server?",
            "tls": f"not a {expected} server, or one that wants TLS from the first byte (it answered TLS)",
            "nats": f"not a {expected} server: a NATS server answered",
            "redis": f"not a {expected} server: a Redis server answered ({heard})",
            "http": f"not a {expected} server: an HTTP server answered ({heard})",
        }.get(self.kind, f"not a {expected} server: it answered {heard}")


async def listen_to(host: str, port: int, timeout: float = _LISTEN) -> Heard:
    """Connect to ``host:port``, say ``PING`` (which NATS and Redis both answer) and hear the answer.

    A NATS server speaks first (``INFO``), a Redis server answers the ping, an HTTP server
    answers that it is a bad request; what else answers is quoted.
    """
    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_tcp(host, port)
    except TimeoutError:
        return Heard("unreachable", f"no answer to connecting within {timeout:g}s")
    except OSError as exc:
        cause = exc.__cause__  # anyio's: the last attempt's error, or a group of them
        causes = cause.exceptions if isinstance(cause, ExceptionGroup) else (cause or exc,)
        refused = any(isinstance(c, ConnectionRefusedError) for c in causes)
        return Heard("refused" if refused else "unreachable", str(causes[-1]))
    data = b""
    async with stream:
        try:
            await stream.send(b"PING\r\n")
            with anyio.move_on_after(timeout):
                while b"\n" not in data and len(data) < 4096:
                    data += await stream.receive(4096)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            if not data:
                return Heard("closed", "")
    return _heard(data)


def _heard(data: bytes) -> Heard:
    """What ``data``, a server's first bytes, says it is."""
    if not data:
        return Heard("silent", "")
    said = "".join(c if c.isprintable() else " " for c in data[:_SHOWN].decode("latin-1")).strip()
    if data.startswith(b"INFO "):
        try:
            info = json.loads(data[5:].split(b"\r\n", 1)[0])
        except ValueError:
            info = None
        return Heard("nats", said, info if isinstance(info, dict) else None)
    if data[:1] in (b"+", b"-", b"$", b"*", b":", b"%", b"_"):
        return Heard("redis", said)
    if data.startswith(b"HTTP/") or data.lstrip()[:9].lower() in (b"<!doctype", b"<html>"):
        return Heard("http", said)
    if data[:1] in (b"\x15", b"\x16") and data[1:2] == b"\x03":
        return Heard("tls", said)
    return Heard("other", said)


def _address(url: str) -> tuple[str, int] | None:
    """Host and port of a ``nats://`` or ``tls://`` URL (websocket ones are not looked at)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("nats", "tls") or not parts.hostname:
        return None
    return parts.hostname, parts.port or 4222


_NOTHING = Heard("unknown", "")


def _reason(heard: Heard | None, settings: Settings) -> str | None:
    """Why ``url`` did not do, from what was heard; None when nothing better than nats-py's is known."""
    if heard is None:
        return None
    if heard.kind != "nats":
        return heard.describe("NATS")
    info = heard.info or {}
    if info.get("tls_required") and not settings.nats_tls_ca:
        return "the server requires TLS: set NATS_TLS_CA to its CA certificate (unless a public CA signed it)"
    if info.get("auth_required") and not settings.credentials:
        return "the server requires credentials: set NATS_USER/NATS_PASSWORD, NATS_TOKEN or NATS_CREDS"
    return None


def tls_context(settings: Settings) -> ssl.SSLContext | None:
    """A client TLS context when any TLS setting is given.

    Raises:
        ValueError: a certificate or key file is missing, unreadable or not PEM; the
            message names the files.
    """
    if not (settings.nats_tls_ca or settings.nats_tls_cert):
        return None
    try:
        ctx = ssl.create_default_context(cafile=settings.nats_tls_ca)
        if settings.nats_tls_cert:
            ctx.load_cert_chain(settings.nats_tls_cert, settings.nats_tls_key)
    except (OSError, ssl.SSLError) as exc:  # ssl's errors leave the file name out
        files = {
            "NATS_TLS_CA": settings.nats_tls_ca,
            "NATS_TLS_CERT": settings.nats_tls_cert,
            "NATS_TLS_KEY": settings.nats_tls_key,
        }
        named = ", ".join(f"{var}={path}" for var, path in files.items() if path)
        raise ValueError(f"cannot load the TLS files ({named}): {exc.strerror or exc}") from None
    return ctx


async def connect_nats(
    settings: Settings, *, name: str | None = None, events: TransportEvents = TransportEvents()
) -> NatsTransport:
    """A NATS connection as ``settings`` describe it: servers, credentials, TLS; ``events``
    are told of refused permissions and reconnections.

    Tries for ``settings.connect_timeout`` seconds, unless every server turns out to speak
    another protocol than NATS, which ends it at once.

    Raises:
        TransportError: no server could be reached or authentication failed; the message
            says why, for each server.
    """
    options = NatsOptions(
        name=name,
        user=settings.nats_user,
        password=settings.nats_password,
        token=settings.nats_token,
        nkeys_seed=settings.nats_nkey_seed,
        creds_file=settings.nats_creds,
        tls=tls_context(settings),
        connect_wait=settings.connect_timeout,
        inbox_prefix=inbox_prefix(settings.name) if settings.proven else None,
    )
    urls = [url.strip() for url in settings.nats_url.split(",") if url.strip()]
    heard: dict[str, Heard] = {}
    connected: list[NatsTransport] = []
    failed: list[TransportError] = []
    wrong: list[TransportError] = []  # every server speaks another protocol

    async def connect(scope: anyio.CancelScope) -> None:
        try:
            connected.append(await NatsTransport.connect(urls, options, events))
        except TransportError as exc:
            failed.append(exc)
        scope.cancel()

    async def look(scope: anyio.CancelScope) -> None:
        await anyio.sleep(LOOK_AFTER)
        for url in urls:
            address = _address(url)
            if address is not None:
                heard[url] = await listen_to(*address)
        if len(heard) == len(urls) and all(h.kind in _OTHER_PROTOCOL for h in heard.values()):
            wrong.append(TransportError(_message(urls, heard, settings, None)))  # no use waiting
            scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(connect, tg.cancel_scope)
        tg.start_soon(look, tg.cancel_scope)
    if connected:
        return connected[0]
    if wrong or not failed:  # not failed: cancelled from outside before either ended
        raise wrong[0] if wrong else TransportError(f"cannot connect to NATS at {', '.join(urls)}: cancelled")
    raise TransportError(_message(urls, heard, settings, failed[0]))


def _message(urls: list[str], heard: dict[str, Heard], settings: Settings, error: Exception | None) -> str:
    """The reason no server would do: what each was heard to be, else (and then) what nats-py said."""
    reasons = {url: _reason(heard.get(url), settings) for url in urls}
    if not any(reasons.values()):
        return str(error)
    within = f" within {settings.connect_timeout:g}s" if error is not None else ""
    if len(urls) == 1:
        told = str(reasons[urls[0]])
    else:
        told = "; ".join(f"{url}: {reason or 'did not answer as NATS'}" for url, reason in reasons.items())
    said = str(error).partition(": ")[2] if error is not None else ""  # the transport's own reason
    if said and all(heard.get(url, _NOTHING).kind == "nats" for url in urls):
        told += f" ({said})"
    return f"cannot connect to NATS at {', '.join(urls)}{within}: {told}"


def bus_events(bus: Callable[[], Bus | None]) -> TransportEvents:
    """What a connection tells the bus ``bus()`` returns. The connection is made before the
    bus, which exists by the time it has anything to tell (nothing is sent before)."""

    def refused(operation: str, subject: str) -> None:
        found = bus()
        if found is not None:
            found.permission_refused(operation, subject)

    async def reconnected() -> None:
        found = bus()
        if found is not None:
            await found.reconnected()

    return TransportEvents(permission_error=refused, reconnected=reconnected)
