"""The web console: the registry, live calls and operator-driven sessions in a browser.

``serve_console(runtime, sessions)`` serves it (``app``: the page and its JSON API; ``feed``:
the live events, calls as they run included; ``rows``: what the page gets of each thing;
``controls``: a person's controls and what they did; ``links``: links to traces in Jaeger;
``tasks`` and ``tasks_api``: the user's durable tasks; ``http``: what the endpoints share;
``auth``: who is using it); ``a2a console`` runs it.
"""

from .auth import ConsoleAuth as ConsoleAuth
from .serve import serve_console as serve_console

__all__ = ["ConsoleAuth", "serve_console"]
