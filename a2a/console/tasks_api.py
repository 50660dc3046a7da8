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

from bus.errors import A2AError

from .auth import ConsoleAuth
from .http import body_of, failure, reply, unauthorised
from .tasks import TaskView

__all__ = ["task_routes"]


def task_routes(view: TaskView, auth: ConsoleAuth) -> list[Route]:
    async def listing(request: Request) -> Response:
        user = auth.user_of(request)
        if user is None:
            return unauthorised()
        try:
            return reply(await view.listing(user))
        except A2AError as exc:
            return failure(exc)

    async def one(request: Request) -> Response:
        user = auth.user_of(request)
        if user is None:
            return unauthorised()
        try:
            return reply(await view.detail(user, request.path_params["id"]))
        except A2AError as exc:
            return failure(exc)

    async def submit(request: Request) -> Response:
        user = auth.user_of(request)
        if user is None:
            return unauthorised()
        try:
            row, created = await view.submit(user, await body_of(request))
        except A2AError as exc:
            return failure(exc)
        return reply(row | {"created": created}, 201 if created else 200)

    async def cancel(request: Request) -> Response:
        user = auth.user_of(request)
        if user is None:
            return unauthorised()
        try:
            await body_of(request)  # a JSON post from the page's own origin, as every change
            return reply(await view.cancel(user, request.path_params["id"]))
        except A2AError as exc:
            return failure(exc)

    return [
        Route("/api/tasks", listing),
        Route("/api/tasks", submit, methods=["POST"]),
        Route("/api/tasks/{id}", one),
        Route("/api/tasks/{id}/cancel", cancel, methods=["POST"]),
    ]
