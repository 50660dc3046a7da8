"""`a2a demo`: the seed-003 roster as separate processes doing one task end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from bus.handoff import ChatMessage
from bus.ids import new_id
from transports import Message

from ..core.runtime import Runtime
from ..core.settings import Settings
from ..dev.servers import NatsServer, RedisServer
from ..processes import die_with_parent
from ..stores.audit import AuditRecord, decode_records
from ..stores.history import Interaction
from .records import INDEX
from .timeline import timeline_table
from .workspace import WORKSPACE_ENV, make_workspace

__all__ = ["AGENT_PROCESSES", "ROSTER", "run_demo"]

AGENT_PROCESSES = {
    "planner": "a2a.demo.agents:planner",
    "reader": "a2a.demo.agents:reader",
    "writer": "a2a.demo.agents:writer",
    "reviewer": "a2a.demo.agents:reviewer",
    "scribe": "a2a.demo.agents:scribe",
    "docs": "a2a.demo.agents:docs",
}
ROSTER = Path(__file__).with_name("roster.yaml")
TASK = "Add a docstring to every public function in the workspace"
# The conversation so far; the planner hands the writer only the last user turns (redacted).
CONVERSATION = [
    ("user", "Hi! I maintain a small shop inventory module."),
    ("assistant", "Happy to help. What would you like to change?"),
    ("user", "Reach me at jane.doe@example.com if anything is unclear."),
    ("assistant", "Noted. Anything about the code itself?"),
    ("user", "The public functions in inventory.py have no docstrings."),
    ("user", TASK + "."),
]


def spawn_agent(target: str, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``a2a serve target`` as a child process that dies with this one."""
    log = open(log_path, "ab")  # noqa: SIM115 - the child keeps it
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "a2a", "serve", target],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
    finally:
        log.close()


def run_demo(
    console: Console,
    *,
    nats_url: str | None = None,
    redis_url: str | None = None,
    external_agents: bool = False,
    workspace_dir: str | None = None,
) -> int:
    """Run the demo; returns the process exit status.

    With ``external_agents`` the six agents already run elsewhere (containers, pods)
    in namespace ``A2A_NAMESPACE`` (default ``demo``), sharing ``workspace_dir``, which must
    be the workspace their own configuration names (``A2A_DEMO_WORKSPACE``, else ``/workspace``).
    """
    t0 = time.monotonic()
    nats_url = nats_url or os.environ.get("NATS_URL")
    redis_url = redis_url or os.environ.get("REDIS_URL")
    if external_agents:
        namespace = os.environ.get("A2A_NAMESPACE") or "demo"
    else:
        namespace = f"demo-{uuid.uuid4().hex[:6]}"
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-demo-")))
        if not nats_url:
            nats = stack.enter_context(NatsServer())
            nats_url = nats.url
            console.print(f"[bold]started[/] nats-server (JetStream) on {nats_url}  pid {nats.pid}")
        else:
            console.print(f"[bold]using[/] NATS at {nats_url}")
        if not redis_url:
            redis = stack.enter_context(RedisServer())
            redis_url = redis.url
            console.print(f"[bold]started[/] {Path(redis.argv()[0]).name} on {redis_url}  pid {redis.pid}")
        else:
            console.print(f"[bold]using[/] Redis at {redis_url}")
        if not os.environ.get("NATS_USER"):
            console.print(
                "[dim]open dev cluster: no credentials, so any process that reaches these servers may"
                " call any agent as anyone (docs: operations/security.md)[/]"
            )
        workspace = make_workspace(Path(workspace_dir) if workspace_dir else tmp / "workspace")
        env = {
            **os.environ,
            "NATS_URL": nats_url,
            "REDIS_URL": redis_url,
            "A2A_NAMESPACE": namespace,
            "A2A_ROSTER": str(ROSTER),
            WORKSPACE_ENV: str(workspace),  # the agents' own setting; callers cannot change it
        }
        env.setdefault("A2A_HEARTBEAT_INTERVAL", "0.5")
        procs: dict[str, subprocess.Popen[bytes]] = {}
        stack.callback(_stop_all, procs)
        for name, target in ({} if external_agents else AGENT_PROCESSES).items():
            procs[name] = spawn_agent(target, env, tmp / f"{name}.log")
            console.print(f"[bold]started[/] agent process {name:<9} pid {procs[name].pid}")
        settings = Settings.from_env(
            nats_url=nats_url,
            redis_url=redis_url,
            namespace=namespace,
            client_name="user",
            roster=str(ROSTER),
        )
        try:
            result, records, interactions = anyio.run(_drive, settings, str(workspace))
        except Exception as exc:
            console.print(f"[red]demo failed:[/] {exc}")
            for name in procs:
                log = (tmp / f"{name}.log").read_text(errors="replace")[-2000:]
                if log.strip():
                    console.print(f"[dim]--- {name} log ---\n{log}[/]")
            return 1
        title = f"Timeline of conversation {records[0].conversation_id[:12]}" if records else "Timeline"
        console.print()
        console.print(timeline_table(records, title=title))
        console.print()
        console.print(_interactions_table(interactions))
        console.print()
        console.print(_review_table(result.get("reviews", [])))
        console.print()
        console.print("[bold]Result[/]")
        console.print_json(json.dumps(result))
        console.print()
        console.print("[bold]workspace/inventory.py after the run[/]")
        console.print(Syntax((workspace / "inventory.py").read_text(), "python", line_numbers=True))
        index = workspace / INDEX
        if index.is_file():
            console.print()
            console.print(f"[bold]workspace/{INDEX}, written by the scribe[/]")
            console.print(Syntax(index.read_text(), "markdown"))
    console.print(f"stopped every process and server it started; ran in {time.monotonic() - t0:.2f} s")
    return 0 if result.get("status") == "done" else 1


async def _drive(
    settings: Settings, workspace: str
) -> tuple[dict[str, Any], list[AuditRecord], list[Interaction]]:
    records: list[AuditRecord] = []

    async def collect(msg: Message) -> None:
        records.extend(decode_records(msg.data, msg.subject))

    async with Runtime(settings) as rt:
        assert rt.history is not None
        await rt.subscribe_audit(collect)
        await rt.wait_for_agents(list(AGENT_PROCESSES), timeout=30)
        conversation = new_id()
        now = time.time()
        await rt.history.append(
            conversation,
            *[ChatMessage(role=role, content=text, created_at=now) for role, text in CONVERSATION],
        )
        response = await rt.request(
            "planner",
            "run",
            {"task": TASK, "workspace": workspace},
            user_id="demo-user",
            conversation_id=conversation,
            timeout=30,
        )
        top = response.metadata.key
        # Audit records are published after each reply; give the last ones a moment to arrive.
        with anyio.move_on_after(3):
            while not any(r.request_id == top for r in records):
                await anyio.sleep(0.02)
        await anyio.sleep(0.1)
        interactions = await rt.history.interactions(conversation)
    mine = [r for r in records if r.conversation_id == conversation]
    return response.payload.result, mine, interactions


def _interactions_table(interactions: list[Interaction]) -> Table:
    table = Table(title="Sub-agent interactions kept in the conversation history", title_justify="left")
    for column in ("caller → target", "task", "output preview", "ok", "duration"):
        table.add_column(column)
    for i in interactions:
        table.add_row(
            f"{i.caller} → {i.target}",
            i.task,
            i.output_preview,
            "yes" if i.success else f"no {i.error_code or ''}",
            f"{i.duration_ms:.1f} ms",
        )
    return table


def _review_table(reviews: list[dict[str, Any]]) -> Table:
    """Each review as it went: the reviewer's checks and the writer's fixes in between."""
    table = Table(title="Review loop: reviewer ⇄ writer", title_justify="left")
    for column in ("file", "step", "outcome"):
        table.add_column(column)
    for review in reviews:
        for step in review.get("rounds", []):
            if "check" in step:
                style = "green" if step["check"] == "PASS" else "red"
                problems = "; ".join(step["problems"])
                outcome = f"[{style}]{step['check']}[/]" + (f" {problems}" if problems else "")
                table.add_row(review["path"], "reviewer checks (lint)", outcome)
            else:
                table.add_row(review["path"], f"reviewer → {step['fix']}: fix", step["summary"])
        if not review.get("rounds"):
            table.add_row(review["path"], "review", f"{review['verdict']} {'; '.join(review['problems'])}")
    return table


def _stop_all(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + 10
    for proc in procs.values():
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
