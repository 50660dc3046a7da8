"""One turn of Google ADK's ``RemoteA2aAgent``, given only an A2A agent's base URL.

    python remote_turn.py --url http://127.0.0.1:8080 [--streaming | --no-streaming]
                          [--prefer HTTP+JSON] TEXT

The agent is built from ``<url>/.well-known/agent-card.json`` (ADK's
``AGENT_CARD_WELL_KNOWN_PATH``); ADK resolves the card with the a2a-sdk's card resolver
and client factory, and ``Runner`` runs the turn in an in-memory session. No model is
involved: a ``RemoteA2aAgent`` turn is the remote agent's answer. The message is plain
text. Printed, one JSON object a line: each ADK event as ``{"event": "adk", "author",
"text", "parts", "partial", "errorMessage", "metadata"}``, then ``{"event": "answer",
"text"}`` with the text of the last event that had any; each request sent on the
script's own httpx client (below) as ``{"event": "request", "verb", "path", "method",
"version"}``. A failure prints ``{"error": {"type", "message"}}`` and exits with 1.

Without options ADK builds its own a2a-sdk client factory. ``--streaming``,
``--no-streaming`` or ``--prefer`` give the agent a factory of this script's instead,
with its own ``httpx.AsyncClient``. That client must be in the factory's config from the
start: given a factory without one, ADK 2.13 copies the factory onto an httpx client of
its own (``google.adk.a2a._compat.rebind_client_factory_httpx``) and sets the
``A2A-Version: 1.0`` header on that client only if the factory has an ``_httpx_client``
attribute, which a2a-sdk 1.3's ``ClientFactory`` does not have. Its requests then use the
1.0 methods (``SendStreamingMessage``) with no ``A2A-Version``, which the spec reads as
0.3, and a 1.0 server (the SDK's own, as the gateway) refuses them with
``VersionNotSupportedError``. ``ClientFactory.__init__`` sets the header on a client it
is given, and ``RemoteA2aAgent`` then uses that client without copying the factory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from google.adk.a2a.agent import RemoteA2aAgent
from google.adk.agents.remote_a2a_agent import AGENT_CARD_WELL_KNOWN_PATH
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

APP = "interop"
USER = "tester"


def readable(part: types.Part) -> dict[str, Any]:
    """A part as JSON; inline bytes (ADK carries an A2A data part so) as text."""
    if part.inline_data is not None and part.inline_data.data is not None:
        return {
            "mimeType": part.inline_data.mime_type,
            "data": part.inline_data.data.decode(errors="replace"),
        }
    dumped: dict[str, Any] = part.model_dump(mode="json", exclude_none=True)
    return dumped


def emit(line: dict[str, Any]) -> None:
    print(json.dumps(line, default=str), flush=True)


async def report(request: httpx.Request) -> None:
    """Prints what goes out on this script's own client: the test checks binding and method."""
    method = (
        json.loads(request.content).get("method") if request.method == "POST" and request.content else None
    )
    version = request.headers.get("A2A-Version")
    emit(
        {
            "event": "request",
            "verb": request.method,
            "path": request.url.path,
            "method": method,
            "version": version,
        }
    )


def factory(http: httpx.AsyncClient, streaming: bool | None, prefer: str | None) -> ClientFactory:
    bindings = ["JSONRPC", "HTTP+JSON"]  # ADK's own default preference
    if prefer:
        bindings = [prefer, *(b for b in bindings if b != prefer)]
    config = ClientConfig(
        httpx_client=http,
        supported_protocol_bindings=bindings,
        use_client_preference=prefer is not None,
        streaming=True if streaming is None else streaming,
    )
    return ClientFactory(config)


async def turn(url: str, text: str, streaming: bool | None, prefer: str | None) -> None:
    card_url = url.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH
    async with httpx.AsyncClient(timeout=60, event_hooks={"request": [report]}) as http:
        own = streaming is not None or prefer is not None
        remote = RemoteA2aAgent(
            name="remote",
            agent_card=card_url,
            a2a_client_factory=factory(http, streaming, prefer) if own else None,
        )
        await run_turn(remote, text)


async def run_turn(remote: RemoteA2aAgent, text: str) -> None:
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=remote, session_service=sessions)
    session = await sessions.create_session(app_name=APP, user_id=USER)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    answer = None
    async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=message):
        parts = event.content.parts if event.content and event.content.parts else []
        said = "".join(p.text for p in parts if p.text) or None
        emit(
            {
                "event": "adk",
                "author": event.author,
                "text": said,
                "parts": [readable(p) for p in parts],
                "partial": event.partial,
                "errorMessage": event.error_message,
                "metadata": event.custom_metadata or {},
            }
        )
        if event.error_message:
            raise RuntimeError(event.error_message)
        answer = said or answer
    emit({"event": "answer", "text": answer})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--streaming", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--prefer", choices=["JSONRPC", "HTTP+JSON"])
    parser.add_argument("text")
    args = parser.parse_args()
    try:
        asyncio.run(turn(args.url, args.text, args.streaming, args.prefer))
    except Exception as exc:
        emit({"error": {"type": type(exc).__name__, "message": str(exc)}})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
