"""Durable tasks on a real nats-server (JetStream): a task survives the SIGKILL of the instance
running it and of the process that submitted it, and ends exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from a2a import Agent, Context, Runtime, Settings
from bus.durable import keys
from bus.ids import ID_LENGTH
from tests.helpers import ROOT, AgentProcess, agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ACK_WAIT = 1.5

# -- the agent (served by `a2a serve tests.integration.test_durable_tasks:crafter`) ----------

crafter = Agent("crafter", max_concurrency=4)


def _note(path: str, line: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


@crafter.action("work")
async def _work(ctx: Context, params: dict[str, Any]) -> Any:
    """Charge once (a journaled effect), keep a checkpoint, then work ``seconds``."""
    _note(params["log"], {"attempt": ctx.task.number, "pid": os.getpid()})

    async def charge() -> str:
        _note(params["charges"], {"attempt": ctx.task.number})
        return "receipt"

    receipt = await ctx.task.effect("charge", charge)
    await ctx.task.checkpoint({"charged": receipt})
    await anyio.sleep(params["seconds"])
    return {"attempt": ctx.task.number, "pid": os.getpid(), "receipt": receipt}


@crafter.action("long")
async def _long(ctx: Context, params: dict[str, Any]) -> Any:
    """Work ``first`` seconds in the first attempt, ``then`` seconds in later ones."""
    _note(params["log"], {"attempt": ctx.task.number, "pid": os.getpid()})
    await anyio.sleep(params["first"] if ctx.task.number == 1 else params["then"])
    return {"attempt": ctx.task.number, "pid": os.getpid()}


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def files() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="a2a-tasks-") as folder:
        yield Path(folder)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def settings(nats_url: str, redis_url: str, namespace: str) -> Settings:
    return Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace=namespace,
        heartbeat_interval=0.25,
        tasks=True,
        task_ack_wait=ACK_WAIT,
    )


def instance(s: Settings) -> AgentProcess:
    return AgentProcess(
        s, "tests.integration.test_durable_tasks:crafter", A2A_TASKS="1", A2A_TASK_ACK_WAIT=str(ACK_WAIT)
    )


async def wait_for(condition: Any, timeout: float) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.02)


# -- tests ---------------------------------------------------------------------------------


async def test_the_instance_running_a_task_is_killed_and_another_finishes_it(
    nats_url: str, redis_url: str, namespace: str, files: Path
) -> None:
    s = settings(nats_url, redis_url, namespace)
    log, charges = files / "log", files / "charges"
    with instance(s) as first, instance(s) as second:
        async with Runtime(s) as rt:
            await rt.wait_for_agents(["crafter"], timeout=20)
            params = {"log": str(log), "charges": str(charges), "seconds": 1.0}
            task = await rt.tasks.submit("crafter", "work", params, timeout=60)
            await wait_for(lambda: bool(lines(log)), 20)
            running = lines(log)[0]["pid"]
            await wait_for(lambda: bool(lines(charges)), 5)  # charged and recorded before the kill
            victim = first if running == first.pid else second
            victim.kill()
            with anyio.fail_after(ACK_WAIT + 15):
                result = await task.result()
            outcome = await task.outcome()
            stored = await rt.tasks.store.get(keys.TaskKeys.of(task.record).outcome, dict)  # type: ignore[union-attr]
            with anyio.fail_after(5):
                journal = [event async for event in task.events()]
    survivor = second.pid if victim is first else first.pid
    assert result == {"attempt": 2, "pid": survivor, "receipt": "receipt"}
    assert outcome.attempt == 2 and stored is not None
    assert [entry["attempt"] for entry in lines(log)] == [1, 2]
    assert lines(charges) == [{"attempt": 1}]  # the effect of attempt 1 was not run again
    started = [(e.attempt, e.instance) for e in journal if e.kind == "attempt"]
    assert [n for n, _ in started] == [1, 2] and started[0][1] != started[1][1]
    assert journal[-1].kind == "ended" and journal[-1].state == "completed"
    assert [e.n for e in journal] == list(range(1, len(journal) + 1))


SUBMIT = """
import sys, anyio
from a2a import Runtime, Settings

async def main() -> None:
    async with Runtime(Settings.from_env()) as rt:
        task = await rt.tasks.submit("crafter", "work", {params}, key="job-1", timeout=60)
        print(task.id, flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


def submit_then_die(s: Settings, params: dict[str, Any]) -> str:
    """Submit from a process of its own, which is SIGKILLed once it printed the task id."""
    script = SUBMIT.replace("{params}", repr(params))
    env = agent_env(s, A2A_TASKS="1")
    submitter = subprocess.Popen(
        [sys.executable, "-c", script], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert submitter.stdout is not None
        return submitter.stdout.readline().strip()
    finally:
        os.kill(submitter.pid, signal.SIGKILL)
        submitter.wait(10)


async def test_the_submitting_process_is_killed_and_a_new_one_re_attaches(
    nats_url: str, redis_url: str, namespace: str, files: Path
) -> None:
    s = settings(nats_url, redis_url, namespace)
    log, charges = files / "log", files / "charges"
    params = {"log": str(log), "charges": str(charges), "seconds": 0.5}
    with instance(s):
        task_id = submit_then_die(s, params)
        assert len(task_id) == ID_LENGTH
        async with Runtime(s) as rt:
            by_id = await rt.tasks.get(task_id)
            with anyio.fail_after(30):
                result = await by_id.result()
            by_key = await rt.tasks.submit("crafter", "work", params, key="job-1", timeout=60)
            assert by_key.id == task_id and not by_key.created
            assert await by_key.result() == result
    assert len(lines(log)) == 1  # it ran once


async def a2a(s: Settings, *args: str) -> tuple[int, str, str]:
    """``python -m a2a ARGS`` against these servers: exit status, stdout, stderr."""
    done = await anyio.run_process(
        [sys.executable, "-m", "a2a", *args], env=agent_env(s), cwd=ROOT, check=False
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_the_cli_submits_waits_gets_and_refuses_another_user(
    nats_url: str, redis_url: str, namespace: str, files: Path
) -> None:
    s = settings(nats_url, redis_url, namespace)
    params = json.dumps({"log": str(files / "log"), "charges": str(files / "charges"), "seconds": 0.1})
    with instance(s):
        status, out, err = await a2a(
            s, "submit", "crafter", "work", "--params", params, "--key", "k1", "--timeout", "2m", "--json",
            "--user", "ann",
        )  # fmt: skip
        assert status == 0, err
        submitted = json.loads(out)
        assert submitted["state"] == "queued" and len(submitted["taskId"]) == ID_LENGTH
        task_id = submitted["taskId"]
        status, out, err = await a2a(
            s, "task", "wait", task_id, "--json", "--user", "ann", "--timeout", "30s"
        )
        assert status == 0, err
        waited = json.loads(out)
        assert waited["state"] == "completed" and waited["result"]["attempt"] == 1
        status, out, _ = await a2a(s, "task", "get", task_id, "--user", "ann")
        assert status == 0 and json.loads(out)["receipt"] == "receipt"
        status, out, _ = await a2a(
            s, "submit", "crafter", "work", "--params", params, "--key", "k1", "--user", "ann"
        )
        assert status == 0 and out.strip() == task_id  # the same key: the same task
        status, _, err = await a2a(s, "task", "wait", task_id, "--user", "bob")
        assert status == 1 and "PERMISSION_DENIED" in err and "Traceback" not in err
        status, out, err = await a2a(s, "task", "events", task_id, "--user", "ann", "--json")
        assert status == 0, err
        events = [json.loads(line) for line in out.splitlines()]
        assert [(e["n"], e["kind"]) for e in events] == [(1, "attempt"), (2, "ended")]
        assert events[-1]["state"] == "completed" and events[-1]["data"]["attempt"] == 1
        status, out, _ = await a2a(s, "task", "events", task_id, "--user", "ann", "--after", "1")
        assert status == 0 and out.count("\n") == 1 and "completed" in out
        status, out, err = await a2a(s, "tasks", "--user", "ann", "--json")
        assert status == 0 and [(t["taskId"], t["state"]) for t in json.loads(out)] == [
            (task_id, "completed")
        ]
        status, out, _ = await a2a(s, "tasks", "--user", "bob")
        assert status == 0 and out.strip() == "no tasks"
        status, _, err = await a2a(s, "submit", "crafter", "work", "--timeout", "soon")
        assert status == 2 and "duration" in err
    assert len(lines(files / "log")) == 1


async def test_a_task_still_running_when_its_instance_stops_is_handed_back_at_once(
    nats_url: str, redis_url: str, namespace: str, files: Path
) -> None:
    """SIGTERM: the instance lets the attempt run for its grace (5 s), then hands it back; the
    other instance takes it at once, not after the ack wait. Tasks queued meanwhile go to the
    other instance at once too: the stopping one's cut take holds none of them."""
    s = settings(nats_url, redis_url, namespace)
    slow_ack = {"A2A_TASKS": "1", "A2A_TASK_ACK_WAIT": "60"}
    log = files / "log"
    target = "tests.integration.test_durable_tasks:crafter"
    with AgentProcess(s, target, **slow_ack) as first, AgentProcess(s, target, **slow_ack) as second:
        async with Runtime(s) as rt:
            await rt.wait_for_agents(["crafter"], timeout=20)
            params = {"log": str(log), "first": 120, "then": 0.1}
            task = await rt.tasks.submit("crafter", "long", params, timeout=300)
            await wait_for(lambda: bool(lines(log)), 20)
            running = lines(log)[0]["pid"]
            victim = first if running == first.pid else second
            stopped = anyio.current_time()
            os.kill(victim.pid, signal.SIGTERM)
            await anyio.sleep(0.3)  # it stopped taking, and drains
            short = {"log": str(files / "short"), "first": 0, "then": 0}
            with anyio.fail_after(4):  # far under the ack wait
                for _ in range(8):
                    done = await (await rt.tasks.submit("crafter", "long", short, timeout=60)).result()
                    assert done["pid"] != victim.pid
            with anyio.fail_after(30):
                result = await task.result()
            took = anyio.current_time() - stopped
    print(f"\ntask handed back at SIGTERM: ended {took:.2f}s later (ack wait 60 s, grace 5 s)")
    assert result["attempt"] == 2 and result["pid"] != running
    assert took < 15
