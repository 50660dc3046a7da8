"""Run the example: a LangGraph planner, a pydantic-ai coder and a stdio reviewer, each in
its own OS process, on an embedded nats-server and Redis-compatible server (or on the
servers NATS_URL and REDIS_URL name).

    python examples/review_pipeline/run.py ["a task"]
"""

from __future__ import annotations

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

from a2a import Runtime, Settings
from a2a.demo.timeline import timeline_table
from a2a.dev.servers import NatsServer, RedisServer, die_with_parent
from a2a.stores.audit import AuditRecord, decode_records
from transports import Message

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TASK = "Deduplicate a list of tags and sort them"
PROCESSES = {
    "planner": ["-m", "a2a", "serve", "examples.review_pipeline.planner:agent"],
    "coder": ["-m", "a2a", "serve", "examples.review_pipeline.coder:agent"],
    "reviewer": [
        "-m", "a2a", "serve-stdio", "reviewer", "--capability", "code.review",
        "--", sys.executable, str(HERE / "reviewer.py"),
    ],
}  # fmt: skip


def main() -> int:
    console = Console()
    task = " ".join(sys.argv[1:]) or TASK
    with ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="a2a-example-")))
        nats_url, redis_url = os.environ.get("NATS_URL"), os.environ.get("REDIS_URL")
        if not nats_url:
            nats_url = stack.enter_context(NatsServer()).url
        if not redis_url:
            redis_url = stack.enter_context(RedisServer()).url
        env = {
            **os.environ,
            "NATS_URL": nats_url,
            "REDIS_URL": redis_url,
            "A2A_NAMESPACE": f"example-{uuid.uuid4().hex[:6]}",
            "A2A_HEARTBEAT_INTERVAL": "0.5",
            "A2A_OPEN": "1",  # no roster: the planner may call the coder and the reviewer
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        procs = {name: spawn(argv, env, logs / f"{name}.log") for name, argv in PROCESSES.items()}
        stack.callback(stop, procs)
        for name, proc in procs.items():
            console.print(f"[bold]started[/] {name:<8} pid {proc.pid}")
        settings = Settings.from_env(
            nats_url=nats_url, redis_url=redis_url, namespace=env["A2A_NAMESPACE"], client_name="user"
        )
        try:
            result, records = anyio.run(drive, settings, task, console)
        except Exception as exc:
            console.print(f"[red]the example failed:[/] {exc}")
            for name in procs:
                console.print(f"[dim]--- {name} log ---\n{(logs / f'{name}.log').read_text()[-2000:]}[/]")
            return 1
        console.print(timeline_table(records, title="Every hop, across three frameworks"))
        console.print(f"[bold]after {result['rounds']} round(s), the reviewer said:[/] {result['review']}")
        console.print(result["code"])
    return 0


async def drive(settings: Settings, task: str, console: Console) -> tuple[dict[str, Any], list[AuditRecord]]:
    records: list[AuditRecord] = []

    async def collect(msg: Message) -> None:
        records.extend(decode_records(msg.data, msg.subject))

    def show(update: Any) -> None:
        console.print(f"[dim]planner progress:[/] {update}")

    async with Runtime(settings) as rt:
        await rt.subscribe_audit(collect)
        await rt.wait_for_agents(list(PROCESSES), timeout=60)
        console.print(f"[bold]task:[/] {task}")
        response = await rt.request("planner", "run", {"text": task}, timeout=60, on_progress=show)
        top = response.metadata.correlation_id
        with anyio.move_on_after(3):  # audit records are published as each hop ends
            while not any(r.request_id == top for r in records):
                await anyio.sleep(0.02)
        await anyio.sleep(0.3)  # the last hop's own record, from another process
    conversation = response.conversation_id
    return response.payload.result, [r for r in records if r.conversation_id == conversation]


def spawn(argv: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, *argv],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )


def stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        proc.terminate()
    deadline = time.monotonic() + 10
    for proc in procs.values():
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
