"""``a2a bench --chaos``: durable tasks while their instances and servers are SIGKILLed.

One run: its own nats-server(s) with a file store in a temporary directory, a Redis for the
registry, and ``instances`` processes serving :mod:`a2a.bench.chaos_agent` (one counted
side effect per task). ``tasks`` jobs are submitted with idempotency keys, spread over
``seconds``, while the scenario's chaos runs:

    instances   every 1-3 s a random instance is SIGKILLed and started again
    server      the same, and nats-server is SIGKILLed once halfway and restarted on the
                same port and store directory
    cluster     a 3-node JetStream cluster, the task stream and bucket with 3 replicas;
                halfway the node leading the task stream is SIGKILLed (restarted after
                ``outage`` seconds); instances are not killed

Then every task is waited for (``drain`` seconds at most after the chaos), read again by
a fresh runtime (by id, and by submitting its key again), and checked against what the
workers counted (:func:`a2a.bench.chaos_report.verdict`). The submitter only uses the
public API: ``rt.tasks.submit``, ``task.outcome``, ``rt.tasks.get``, ``task.peek``.
"""

from __future__ import annotations

import logging
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec

from bus.durable import TaskOutcome
from bus.errors import A2AError
from transports import TransportError

from ..core.runtime import Runtime
from ..core.settings import Settings
from ..core.task_handle import Task
from ..dev.servers import RedisServer
from .chaos_agent import read_events, worker
from .chaos_report import JobRecord, verdict
from .chaos_servers import CLUSTER_SIZE, Instances, NatsServers
from .chaos_store import QueueCheck, replicate

__all__ = ["ChaosConfig", "Scenario", "run_chaos"]

log = logging.getLogger("a2a.bench")

Scenario = Literal["instances", "server", "cluster"]
RETRY = 0.5
"""Seconds between two tries of a submission or a wait the store refused."""
LOGGED = 5
"""Refused tries of one job kept for the report."""


class ChaosConfig(msgspec.Struct, kw_only=True, frozen=True):
    scenario: Scenario = "instances"
    tasks: int = 1000
    seconds: float = 60.0
    """How long the chaos lasts; the submissions are spread over it."""
    instances: int = 3
    ack_wait: float = 3.0
    """``A2A_TASK_ACK_WAIT`` of the instances: how soon a killed attempt is run again."""
    kill_every: tuple[float, float] = (1.0, 3.0)
    """Seconds between two instance kills, drawn uniformly from this range."""
    outage: float = 2.0
    """Seconds a killed nats-server (or cluster node) stays down."""
    drain: float = 120.0
    """Seconds to wait after the chaos for the last tasks to end (then they are stuck)."""
    before: tuple[float, float] = (0.0, 0.3)
    """Seconds a handler sleeps before its effect, drawn per task."""
    during: tuple[float, float] = (0.05, 0.25)
    """Seconds the effect itself takes (counted halfway), drawn per task."""
    after: tuple[float, float] = (0.2, 0.6)
    """Seconds a handler sleeps after its effect, drawn per task."""
    instance_kills: bool | None = None
    """Kill instances during the chaos; None: in the instances and server scenarios only (on a
    cluster, an instance that starts opens the store, which may scale the task stream down to
    the runtime's one replica: see :func:`a2a.bench.chaos_store.replicate`)."""
    journal: bool = True
    """Run the effect through ``ctx.task.effect``; False runs it bare (a control: it must break)."""
    seed: int | None = None
    keep: bool = False
    """Keep the run's directory (logs, counts) even when every guarantee held."""


def run_chaos(config: ChaosConfig) -> dict[str, Any]:
    """Run one chaos scenario and return its report (``report["ok"]``: every guarantee held).

    Servers and instances are started from this thread, which must be the main thread.

    Raises:
        ServerError: a server or an instance could not be started.
    """
    seed = config.seed if config.seed is not None else random.randrange(2**31)
    folder = Path(tempfile.mkdtemp(prefix="a2a-chaos-"))
    servers = NatsServers(CLUSTER_SIZE if config.scenario == "cluster" else 1)
    redis = RedisServer()
    instances: Instances | None = None
    keep = config.keep
    try:
        servers.start()
        redis.start()
        namespace = "chaos" + uuid.uuid4().hex[:8]
        settings = Settings(
            nats_url=servers.url,
            redis_url=None,  # the submitter needs no registry: tasks go to the agent by name
            namespace=namespace,
            tasks=True,
            task_ack_wait=config.ack_wait,
        )
        notes: list[str] = []
        if config.scenario == "cluster":  # before any runtime opens the store
            anyio.run(replicate, settings, CLUSTER_SIZE, notes)
        env = {
            "NATS_URL": servers.url,
            "REDIS_URL": redis.url,
            "A2A_NAMESPACE": namespace,
            "A2A_TASKS": "1",
            "A2A_TASK_ACK_WAIT": str(config.ack_wait),
        }
        instances = Instances(config.instances, folder, env)
        instances.start_all()
        instances.wait_serving(60.0)
        run = _Run(config, random.Random(seed), settings, servers, instances, notes)
        report = anyio.run(run.run)
        report.update(verdict(run.jobs, read_events(folder)))
        report.update(
            scenario=config.scenario, seconds=config.seconds, seed=seed, ack_wait=config.ack_wait, notes=notes
        )
        if run.queue_left < 0:
            notes.append("whether the queue drained is unknown: JetStream did not answer")
        elif run.queue_left:
            report["broken"].append(f"{run.queue_left} queued message(s) never settled after the tasks ended")
            report["ok"] = False
        keep = keep or not report["ok"]
        if keep:
            report["files"] = str(folder)  # the workers' counts and the instances' logs
        return report
    except BaseException:
        keep = True
        log.warning("the chaos run failed; its files are kept in %s", folder)
        raise
    finally:
        if instances is not None:
            instances.stop()
        servers.stop()
        redis.cleanup()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


class _Run:
    """The asynchronous part of a run: submitting, killing, waiting, reading again."""

    def __init__(
        self,
        config: ChaosConfig,
        rng: random.Random,
        settings: Settings,
        servers: NatsServers,
        instances: Instances,
        notes: list[str],
    ) -> None:
        self.config = config
        self.rng = rng
        self.settings = settings
        self.servers = servers
        self.instances = instances
        self.notes = notes
        tag = uuid.uuid4().hex[:8]
        self.jobs = [JobRecord(job=n, key=f"chaos-{tag}-{n}") for n in range(config.tasks)]
        self.params = [
            {
                "job": n,
                "before": rng.uniform(*config.before),
                "during": rng.uniform(*config.during),
                "after": rng.uniform(*config.after),
                "journal": config.journal,
            }
            for n in range(config.tasks)
        ]
        self.kills: dict[str, Any] = {"instances": 0}
        self.timeout = config.seconds + config.drain + 60.0
        """Each task's deadline: beyond the run, so no task ends DEADLINE_EXCEEDED in it."""
        self.queue_left = 0
        self.t0 = 0.0
        """When the first task was submitted (the loop's clock)."""

    async def run(self) -> dict[str, Any]:
        c = self.config
        async with Runtime(self.settings) as rt:
            if c.scenario == "cluster":  # every runtime has opened the store by now
                await replicate(self.settings, CLUSTER_SIZE, self.notes)
            t0 = self.t0 = anyio.current_time()
            chaos_end = t0 + c.seconds
            give_up = chaos_end + c.drain
            async with anyio.create_task_group() as jobs:
                for job in self.jobs:
                    at = t0 + job.job * c.seconds / max(1, c.tasks)
                    jobs.start_soon(self._job, rt, job, at, give_up)
                async with anyio.create_task_group() as chaos:
                    if c.instance_kills or (c.instance_kills is None and c.scenario != "cluster"):
                        chaos.start_soon(self._kill_instances, chaos_end)
                    if c.scenario != "instances":
                        chaos.start_soon(self._kill_server, t0 + c.seconds / 2)
                await anyio.sleep_until(chaos_end)
                self.instances.restart_dead()  # all of them serve while the last tasks end
                chaos_done = anyio.current_time()
            ended = anyio.current_time()
            self.queue_left = await QueueCheck(self.settings).settled(3 * c.ack_wait + 5.0)
        async with Runtime(self.settings) as fresh:
            await self._read_again(fresh)
        return {
            "kills": self.kills,
            "wall_s": round(ended - t0, 2),
            "chaos_s": round(chaos_done - t0, 2),
            "drain_s": round(ended - chaos_done, 2),
            "instances_started": self.instances.started,
        }

    # -- the jobs --------------------------------------------------------------------------

    async def _job(self, rt: Runtime, job: JobRecord, at: float, give_up: float) -> None:
        await anyio.sleep_until(at)
        task = await self._submit(rt, job, give_up)
        if task is None:
            return
        with anyio.move_on_after(max(0.0, give_up - anyio.current_time())):
            job.waited = await self._follow(task, job)

    async def _submit(self, rt: Runtime, job: JobRecord, give_up: float) -> Task | None:
        """Submit the job with its key until the store accepts it (UNAVAILABLE is retried)."""
        while True:
            try:
                task = await rt.tasks.submit(
                    worker.name, "work", self.params[job.job], key=job.key, timeout=self.timeout
                )
            except (A2AError, TransportError) as exc:
                code = getattr(exc, "code", type(exc).__name__)
                job.submit_errors[code] += 1
                job.refused_at.append(anyio.current_time() - self.t0)
                if len(job.submit_log) < LOGGED:
                    job.submit_log.append(f"{job.refused_at[-1]:6.2f}s {exc}")
                if code != "UNAVAILABLE" or anyio.current_time() > give_up:
                    job.never_accepted = f"{code}: {exc}"
                    return None
                await anyio.sleep(RETRY)
                continue
            job.task_id = task.id
            return task

    async def _follow(self, task: Task, job: JobRecord) -> TaskOutcome:
        """The task's outcome, waited for again whenever the store fails the wait."""
        while True:
            try:
                return await task.outcome()
            except (A2AError, TransportError) as exc:
                job.follow_errors[getattr(exc, "code", type(exc).__name__)] += 1
                await anyio.sleep(RETRY)

    async def _read_again(self, rt: Runtime) -> None:
        """Every task's outcome as a fresh runtime reads it: by id, and by its key."""
        limiter = anyio.CapacityLimiter(32)

        async def read(job: JobRecord) -> None:
            assert job.task_id is not None
            async with limiter:
                for _ in range(20):
                    try:
                        by_id = await rt.tasks.get(job.task_id)
                        job.by_id = await by_id.peek()
                        by_key = await rt.tasks.submit(
                            worker.name, "work", self.params[job.job], key=job.key, timeout=self.timeout
                        )
                        job.by_key_id, job.by_key_created = by_key.id, by_key.created
                        job.by_key = await by_key.peek()
                        return
                    except (A2AError, TransportError) as exc:
                        job.follow_errors[f"reread {getattr(exc, 'code', type(exc).__name__)}"] += 1
                        await anyio.sleep(RETRY)

        async with anyio.create_task_group() as tg:
            for job in self.jobs:
                if job.task_id is not None:
                    tg.start_soon(read, job)

    # -- the chaos -------------------------------------------------------------------------

    async def _kill_instances(self, until: float) -> None:
        """SIGKILL a random instance every ``kill_every`` seconds and start it again at once."""
        low, high = self.config.kill_every
        while True:
            pause = self.rng.uniform(low, high)
            if anyio.current_time() + pause >= until:
                return
            await anyio.sleep(pause)
            index = self.rng.randrange(len(self.instances.procs))
            self.instances.kill(index)
            self.instances.start(index)
            self.kills["instances"] += 1

    async def _kill_server(self, at: float) -> None:
        """SIGKILL nats-server (a cluster: the node leading the task stream) once, restart it.

        The restart blocks this loop until the server accepts connections (a fraction of a
        second): it must be started from this, the main, thread. JetStream's recovery is
        then waited for without blocking.
        """
        await anyio.sleep_until(at)
        index = 0
        leaders: dict[str, str | None] = {}
        if self.config.scenario == "cluster":
            leaders = await QueueCheck(self.settings).leaders()
            index = self.servers.node_named(leaders["stream"]) if leaders["stream"] else 0
        name = self.servers.nodes[index].server_name
        self.servers.kill(index)
        killed = time.monotonic()
        await anyio.sleep(self.config.outage)
        self.servers.restart(index)
        restarted = time.monotonic()
        while not await anyio.to_thread.run_sync(self.servers.jetstream_ready, index):
            await anyio.sleep(0.1)
        self.kills["server"] = {
            "node": name,
            **({"leaders_then": leaders} if leaders else {}),
            "at_s": round(at - self.t0, 2),
            "down_s": round(restarted - killed, 2),
            "jetstream_back_s": round(time.monotonic() - killed, 2),
        }
