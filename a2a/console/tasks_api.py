"""The console's API over durable tasks, always as the logged-in user::

    GET  /api/tasks               the user's tasks (newest first, bounded), or {"enabled": false}
    GET  /api/tasks/{id}          one task: state, attempts, times, outcome, journal
    POST /api/tasks               submit {agent, action, params?, key?, timeout?, maxAttempts?}
    POST /api/tasks/{id}/cancel   cancel it

A task of another user is 404, as one that does not exist; a bad id or body is 400, and
tasks off here 503 (the list says ``enabled: false`` instead).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .auth import ConsoleAuth
from .http import body_of, for_user, reply
from .tasks import TaskView

__all__ = ["task_routes"]


def task_routes(view: TaskView, auth: ConsoleAuth) -> list[Route]:
    async def listing(request: Request, user: str) -> Response:
        return reply(await view.listing(user))

    async def one(request: Request, user: str) -> Response:
        return reply(await view.detail(user, request.path_params["id"]))

    async def submit(request: Request, user: str) -> Response:
        row, created = await view.submit(user, await body_of(request))
        return reply(row | {"created": created}, 201 if created else 200)

    async def cancel(request: Request, user: str) -> Response:
        await body_of(request)  # a JSON post from the page's own origin, as every change
        return reply(await view.cancel(user, request.path_params["id"]))

    return [
        Route("/api/tasks", for_user(auth, listing)),
        Route("/api/tasks", for_user(auth, submit), methods=["POST"]),
        Route("/api/tasks/{id}", for_user(auth, one)),
        Route("/api/tasks/{id}/cancel", for_user(auth, cancel), methods=["POST"]),
    ]
