"""A session whose owning process dies or stalls, with real processes: ``a2a session start``
runs the session, ``a2a console`` serving the same user adopts it when its owner is killed
(SIGKILL) or stopped (SIGSTOP) past its lease, and runs it to its end with every turn once.

The step in flight at the loss runs again, visibly: a message being answered is sent again
(the remote agent gets it twice; the turn is marked ``resent``), a draft being written is
asked for again. The agents run in the test process, which also follows ``session-events``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest

from a2a import Agent, Context, Runtime, Settings
from a2a.console.feed import Event
from a2a.console.watch import Watcher
from a2a.sessions import Session
from a2a.sessions.policy import PolicyStore
from a2a.sessions.store import SessionStore
from tests.helpers import ROOT, agent_env
from tests.sessions.conftest import ALLOWED, USER, Received, remote_agents

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

LEASE = "1.5"  # seconds: a dead owner's session is adopted 1.5 to 2.5 s after its last renewal


class Proc:
    """``python -m a2a <args>`` in a child process, its output in a file."""

    def __init__(self, settings: Settings, log: Path, *args: str) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "a2a", *args],
                env=agent_env(settings, A2A_SESSION_LEASE=LEASE),
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def owner_prefix(self) -> str:
        return f"{socket.gethostname()}/{self.proc.pid}/"

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    async def line(self, pattern: str, timeout: float = 20) -> re.Match[str]:
        with anyio.fail_after(timeout):
            while (found := re.search(pattern, self.text())) is None:
                assert self.proc.poll() is None, self.text()
                await anyio.sleep(0.05)
        return found

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)


@contextmanager
def processes() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    try:
        yield started
    finally:
        for p in started:
            if p.proc.poll() is None:
                p.proc.send_signal(signal.SIGCONT)
                p.proc.kill()
            p.proc.wait(10)


@dataclass
class World:
    settings: Settings
    store: SessionStore
    received: list[Received]
    frames: list[dict[str, Any]] = field(default_factory=list)
    """The prompt frames the local agent got."""
    events: list[Session] = field(default_factory=list)
    """The session as every ``session-events`` change showed it."""

    async def ended(self, session_id: str, timeout: float = 20) -> Session:
        with anyio.fail_after(timeout):
            while (s := await self.store.get(session_id)).state not in ("completed", "error", "stopped"):
                await anyio.sleep(0.05)
        return s


def drafter(frames: list[dict[str, Any]], hold_turn: int | None) -> Agent:
    """The local agent: ``draft <turn>``; the first request for ``hold_turn`` takes 1.5 s."""
    agent = Agent("drafter")

    @agent.action("prompt")
    async def prompt(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        frames.append(params)
        turn = params["turn_index"]
        if turn == hold_turn and [f["turn_index"] for f in frames].count(turn) == 1:
            await anyio.sleep(1.5)
        return {"draft_message": f"draft {turn}"}

    return agent


@asynccontextmanager
async def world(
    settings: Settings, remote_delay: float, hold_turn: int | None = None
) -> AsyncIterator[World]:
    received: list[Received] = []
    async with Runtime(settings) as rt, anyio.create_task_group() as tg:
        assert rt.registry is not None
        w = World(settings, SessionStore(rt.registry.redis, settings.namespace), received)
        await rt.serve(drafter(w.frames, hold_turn), *remote_agents(received, remote_delay))
        await PolicyStore(rt.registry.redis, settings.namespace).set(USER, "drafter", ALLOWED)

        async def follow(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            async with w.store.events() as events:
                task_status.started()
                async for event in events:
                    w.events.append(event.session)

        await tg.start(follow)
        yield w
        tg.cancel_scope.cancel()


async def start_both(w: World, tmp: Path, started: list[Proc], turns: int) -> tuple[Proc, Proc, str, str]:
    """``a2a console`` (the adopter), then ``a2a session start`` (the owner): and the session's id."""
    console = Proc(w.settings, tmp / "console.log", "console", "--user", USER, "--port", "0")
    started.append(console)
    url = (await console.line(r"A2A console on (http://\S+)/"))[1]
    owner = Proc(
        w.settings,
        tmp / "owner.log",
        *("session", "start", "drafter", "remote", "check the API", "--mode", "full_auto"),
        *("--max-turns", str(turns), "--user", USER),
    )
    started.append(owner)
    session_id = (await owner.line(r"session (sess_\w+) started"))[1]
    return console, owner, url, session_id


def check_every_turn_once(s: Session, turns: int, resent_turn: int | None) -> None:
    assert s.state == "stopped" and s.ending is not None and s.ending.limit == "maxTurns"
    assert [t.index for t in s.turns] == list(range(2 * turns))
    assert [t.role for t in s.turns] == ["local_agent", "remote_agent"] * turns
    assert [t.text for t in s.turns[::2]] == [f"draft {k}" for k in range(turns)]
    assert [t.index for t in s.turns if t.resent] == ([] if resent_turn is None else [resent_turn])


def check_events(w: World, owner: Proc, adopter: Proc) -> Session:
    """The events show the owner, then one change saying who adopted it, then only the adopter."""
    first = next(i for i, s in enumerate(w.events) if s.adoptions)
    adoption = w.events[first]
    assert all(s.owner.startswith(owner.owner_prefix()) for s in w.events[:first])
    assert all(s.owner == adoption.owner for s in w.events[first:])
    assert adoption.owner.startswith(adopter.owner_prefix())
    watcher = Watcher()
    lines = [line for s in w.events for line in watcher.lines(Event("session", s, USER))]
    assert sum(f"adopted by {adoption.owner} ({w.events[0].owner} is gone)" in line for line in lines) == 1
    return adoption


@pytest.mark.parametrize("step", ["remote", "local"])
async def test_a_killed_owner_s_session_is_adopted_and_completes_with_every_turn_once(
    settings: Settings, tmp_path: Path, step: str
) -> None:
    turns = 4
    async with world(settings, 0.6 if step == "remote" else 0.05, 1 if step == "local" else None) as w:
        with processes() as started:
            console, owner, url, session_id = await start_both(w, tmp_path, started, turns)
            with anyio.fail_after(15):  # kill it while the second message is answered / drafted
                while not (len(w.received) == 2 if step == "remote" else len(w.frames) == 2):
                    await anyio.sleep(0.01)
            owner.signal(signal.SIGKILL)
            s = await w.ended(session_id)
            async with httpx.AsyncClient(base_url=url, timeout=5) as client:
                shown = (await client.get(f"/api/sessions/{session_id}")).json()
        assert owner.proc.returncode == -signal.SIGKILL

    check_every_turn_once(s, turns, 2 if step == "remote" else None)
    [a] = s.adoptions
    assert a.previous.startswith(owner.owner_prefix()) and a.by.startswith(console.owner_prefix())
    assert (a.state, a.rerun) == (
        ("waiting_remote", "remote") if step == "remote" else ("waiting_local", "local")
    )
    assert shown["adoptions"][0]["by"] == a.by and shown["state"] == "stopped"  # the console shows it
    assert check_events(w, owner, console).adoptions == [a]
    texts = [r.text for r in w.received]
    asked = [f["turn_index"] for f in w.frames]
    if step == "remote":  # the message in flight went twice; the local agent was asked once a turn
        assert texts == ["draft 0", "draft 1", "draft 1", "draft 2", "draft 3"] and asked == [0, 1, 2, 3]
    else:  # the draft in flight was asked twice; each message went once
        assert texts == [f"draft {k}" for k in range(turns)] and asked == [0, 1, 1, 2, 3]


async def test_an_owner_that_stalls_past_its_lease_writes_nothing_after_the_adoption(
    settings: Settings, tmp_path: Path
) -> None:
    turns = 3
    async with world(settings, 1.0) as w:
        with processes() as started:
            console, owner, _, session_id = await start_both(w, tmp_path, started, turns)
            with anyio.fail_after(15):
                while not w.received:
                    await anyio.sleep(0.01)
            owner.signal(signal.SIGSTOP)  # its call goes on; its lease is not renewed
            with anyio.fail_after(10):
                while not any(s.adoptions for s in w.events):
                    await anyio.sleep(0.02)
            owner.signal(signal.SIGCONT)  # the reply to its call is waiting for it
            s = await w.ended(session_id)
            with anyio.fail_after(10):  # it follows the session to its end, as a viewer
                while owner.proc.poll() is None:
                    await anyio.sleep(0.05)
        assert owner.proc.returncode == 0, owner.text()

    check_every_turn_once(s, turns, 0)
    check_events(w, owner, console)
    assert [r.text for r in w.received] == ["draft 0", "draft 0", "draft 1", "draft 2"]
    assert "this process stops running it" in owner.text()
