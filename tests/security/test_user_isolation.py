"""A user's conversation is read only by that user's calls; leaving userId out is no way in."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from a2a import Runtime, Settings
from a2a.errors import PermissionDenied
from bus.handoff import ChatMessage
from tests.delegates import make

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SECRET = "alice's launch codes: 0000"


async def test_a_call_without_a_user_cannot_read_a_users_conversation(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        await rt.serve(make("lead"), make("helper"))
        assert rt.history is not None
        conversation = uuid.uuid4().hex
        await rt.history.claim(conversation, "alice")
        await rt.history.append(conversation, ChatMessage(role="user", content=SECRET))
        spec: dict[str, Any] = {"target": "helper", "task": "summarise", "context": {"last_messages": 5}}

        for user in (None, "bob"):
            with pytest.raises(PermissionDenied):
                await rt.call("lead", "delegate", spec, user_id=user, conversation_id=conversation)

        response = await rt.call("lead", "delegate", spec, user_id="alice", conversation_id=conversation)
        received = response["artifacts"][0]["value"]
        assert received["messages"] == [SECRET] and received["user"] == "alice"
