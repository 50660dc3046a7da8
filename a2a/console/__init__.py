"""The web console: the registry, live call timelines and operator-driven sessions in a browser.

``serve_console(runtime, sessions)`` serves it (``app``: the page and its JSON API, ``page``:
the HTML, ``feed``: the live events, ``auth``: who is using it); ``a2a console`` runs it.
"""

from .auth import ConsoleAuth as ConsoleAuth
from .serve import serve_console as serve_console

__all__ = ["ConsoleAuth", "serve_console"]
