"""What a chaos run asks JetStream directly, with nats-py: the task stream and bucket's
replicas on a cluster, which node leads the stream, and whether the queue drained.

The runtime creates the stream and the bucket with one replica and has no setting for
more; on a cluster the harness creates them with three before any runtime opens them,
and checks again once the runtimes have (opening updates an existing stream to the
runtime's own configuration).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import nats
import nats.errors
import nats.js.errors
from nats.js.api import KeyValueConfig, RetentionPolicy, StorageType, StreamConfig
from nats.js.client import JetStreamContext

from bus.subjects import Subjects

from ..core.settings import Settings

__all__ = ["QueueCheck", "replicate"]

CONSUMER = "chaos-worker"
"""The durable consumer the worker's takers share (named after the agent)."""


@asynccontextmanager
async def _jetstream(settings: Settings) -> AsyncIterator[JetStreamContext]:
    nc = await nats.connect(servers=settings.nats_url.split(","), connect_timeout=5, max_reconnect_attempts=5)
    try:
        yield nc.jetstream(timeout=5.0)
    finally:
        await nc.close()


async def replicate(settings: Settings, replicas: int, notes: list[str]) -> None:
    """Have the task stream and bucket (and the worker's consumer, once it exists) keep
    ``replicas`` copies: create them so when missing, scale them back up when a runtime
    scaled them down, and wait until every replica is current. ``notes`` gets what was done.

    Raises:
        TimeoutError: the replicas did not catch up within 60 s.
    """
    subjects = Subjects(settings.namespace)
    stream, bucket = subjects.task_stream, subjects.task_bucket
    async with _jetstream(settings) as js:
        try:
            await js.stream_info(stream)
        except nats.js.errors.NotFoundError:
            config = StreamConfig(
                name=stream,
                subjects=[subjects.task_queues()],
                retention=RetentionPolicy.WORK_QUEUE,
                storage=StorageType.FILE,
                num_replicas=replicas,
                duplicate_window=120.0,
                allow_msg_ttl=True,
            )
            await js.add_stream(config)
            kv = KeyValueConfig(bucket=bucket, history=1, storage=StorageType.FILE, replicas=replicas)
            await js.create_key_value(kv)
            notes.append(f"task stream and bucket created with R{replicas} before any runtime opened them")
        else:
            for name in (stream, f"KV_{bucket}"):
                info = await js.stream_info(name)
                have = info.config.num_replicas or 1
                if have < replicas:
                    notes.append(
                        f"{name} had R{have} after the runtimes opened it (R{replicas} was made): "
                        f"scaled back to R{replicas}"
                    )
                    info.config.num_replicas = replicas
                    await js.update_stream(info.config)
        with anyio.fail_after(60):  # scaling up takes about ten seconds
            for name in (stream, f"KV_{bucket}"):
                while len(await _current(js, name)) < replicas:
                    await anyio.sleep(0.2)
            try:
                while len(await _current(js, stream, CONSUMER)) < replicas:
                    await anyio.sleep(0.2)
                notes.append(f"the worker's consumer has {replicas} current replicas")
            except nats.js.errors.NotFoundError:
                pass  # no taker has made it yet: made later, it has the stream's replicas


async def _current(js: JetStreamContext, stream: str, consumer: str | None = None) -> list[str]:
    """The nodes holding a current copy of ``stream`` (or of its ``consumer``), leader first."""
    info = await (js.consumer_info(stream, consumer) if consumer else js.stream_info(stream))
    cluster = info.cluster
    if cluster is None or not cluster.leader:
        return []
    return [cluster.leader, *(str(p.name) for p in cluster.replicas or [] if p.current)]


class QueueCheck:
    """Questions about the task stream of ``settings``' namespace, each on a short connection."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        subjects = Subjects(settings.namespace)
        self.stream, self.bucket = subjects.task_stream, subjects.task_bucket

    async def leaders(self) -> dict[str, str | None]:
        """The server name of the node leading the task stream, the bucket and the worker's
        consumer (None: no cluster, or none yet)."""
        found: dict[str, str | None] = {}
        async with _jetstream(self.settings) as js:
            for role, name, consumer in (
                ("stream", self.stream, None),
                ("bucket", f"KV_{self.bucket}", None),
                ("consumer", self.stream, CONSUMER),
            ):
                try:
                    nodes = await _current(js, name, consumer)
                except nats.js.errors.NotFoundError:
                    nodes = []
                found[role] = nodes[0] if nodes else None
        return found

    async def settled(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the queue to hold no message; how many it still
        holds (-1: JetStream did not answer)."""
        left = -1
        with anyio.move_on_after(timeout):
            while left:
                try:
                    async with _jetstream(self.settings) as js:
                        while left:
                            left = (await js.stream_info(self.stream)).state.messages
                            if left:
                                await anyio.sleep(0.25)
                except (nats.errors.Error, OSError):
                    await anyio.sleep(0.25)
        return left
