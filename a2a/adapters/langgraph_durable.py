"""A LangGraph checkpointer kept in the durable task the graph runs as, so a redelivered task resumes.

When a graph runs as a durable task (``ctx.task.task_id`` is set), :class:`TaskSaver` is its
checkpointer. It holds, for the run's one thread, only what resuming needs: the latest
checkpoint of each checkpoint namespace (the graph's, and those of subgraphs running in
the current step) and the pending writes of the nodes that finished in the step under
way. After every super-step and every finished node that whole value goes into
``ctx.task.checkpoint(...)``; a later attempt of the task reads it back from
``ctx.task.last_checkpoint``, and LangGraph, run on the same thread with input ``None``,
continues with the step that was running: the steps before it do not run again, nor do
the nodes of that step that had finished.

Each piece is serialised with the saver's serde (LangGraph's ``JsonPlusSerializer`` by
default), compressed (zlib) and base64-encoded, so the value is JSON. The task store
refuses large values: a value above :data:`CHECKPOINT_LIMIT` bytes fails the run with
PAYLOAD_TOO_LARGE instead of being written.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Protocol

import msgspec
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.pregel import Pregel

from bus.errors import PayloadTooLarge

__all__ = ["CHECKPOINT_LIMIT", "FORMAT", "TaskCheckpoints", "TaskSaver", "resumable"]

log = logging.getLogger("a2a.adapters.langgraph")

CHECKPOINT_LIMIT = 1_000_000
"""The largest value (bytes of JSON) the saver gives the task store; the store's own limit
(NATS ``max_payload``, 1 MiB by default, headers included) is a little above."""

FORMAT = "langgraph-task-saver/1"
"""Marks (and versions) the values this saver keeps, so an attempt never misreads another's."""

_encode = msgspec.json.Encoder().encode


class TaskCheckpoints(Protocol):
    """What the saver needs of a durable task's attempt (``ctx.task``)."""

    @property
    def last_checkpoint(self) -> Any: ...

    async def checkpoint(self, state: Any) -> None: ...


def resumable(graph: Pregel[Any, Any, Any, Any]) -> bool:
    """Whether a run of ``graph`` can resume from :class:`TaskSaver`'s value.

    A ``DeltaChannel`` keeps its value as the writes of every earlier checkpoint, which
    this saver (keeping only the latest) does not have: such graphs start over instead.
    """
    graphs = [graph, *(sub for _, sub in graph.get_subgraphs(recurse=True) if isinstance(sub, Pregel))]
    return not any(isinstance(ch, DeltaChannel) for g in graphs for ch in g.channels.values())


Typed = tuple[str, str]
"""A serde ``(type, bytes)`` pair, the bytes compressed and base64-encoded: JSON-safe."""


class _Write(msgspec.Struct, array_like=True):
    """One pending write of a finished node (``idx`` as LangGraph's savers number them)."""

    task_id: str
    idx: int
    channel: str
    value: Typed
    task_path: str


class _Head(msgspec.Struct):
    """The latest checkpoint of one checkpoint namespace, and the writes made on top of it."""

    id: str
    parent: str | None
    checkpoint: Typed
    metadata: Typed
    writes: list[_Write]


class _Kept(msgspec.Struct):
    """The value kept in the task: the thread's latest checkpoint in each namespace."""

    format: str
    thread: str
    heads: dict[str, _Head]


class _State:
    """The saver's state. LangGraph may clone the saver (``with_allowlist`` makes a shallow
    copy), so everything lives here, changed in place and shared by the clones."""

    def __init__(self, thread_id: str) -> None:
        self.kept = _Kept(FORMAT, thread_id, {})
        self.changes = 0
        """Changes made to ``kept``; ``saved`` of them are in the task."""
        self.saved = 0
        self.lock = asyncio.Lock()


class TaskSaver(BaseCheckpointSaver[int]):
    """The checkpointer of one graph run inside one attempt of a durable task.

    ``attempt`` is ``ctx.task``; ``thread_id`` is the run's thread (the same in every
    attempt). Only the async API is served: the adapter runs graphs with ``astream``, and
    with ``durability="sync"`` (a step's checkpoint is kept before the next step starts).
    """

    def __init__(
        self, attempt: TaskCheckpoints, thread_id: str, *, serde: SerializerProtocol | None = None
    ) -> None:
        super().__init__(serde=serde)
        self.attempt = attempt
        self.state = _State(thread_id)
        self.resumed = _load(self.state, attempt.last_checkpoint)
        """Whether an earlier attempt left a checkpoint of the graph to continue from."""

    def take_over(self, value: Any) -> bool:
        """Continue from ``value``, the last checkpoint of the task before this one on the
        same thread (a turn that ended waiting for input): whether it holds the graph's.
        This task holds none of it yet, so its first write keeps it all."""
        if not _load(self.state, value):
            return False
        self.state.saved = 0
        return True

    # -- reading ---------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config.get("configurable", {})
        if conf.get("thread_id") != self.state.kept.thread:
            return None
        ns = conf.get("checkpoint_ns", "")
        head = self.state.kept.heads.get(ns)
        wanted = get_checkpoint_id(config)
        if head is None or (wanted is not None and wanted != head.id):
            return None  # only the latest checkpoint is kept
        writes = sorted(head.writes, key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        return CheckpointTuple(
            config=self._config(ns, head.id),
            checkpoint=self._loads(head.checkpoint),
            metadata=self._loads(head.metadata),
            parent_config=self._config(ns, head.parent) if head.parent else None,
            pending_writes=[(w.task_id, w.channel, self._loads(w.value)) for w in writes],
        )

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The latest checkpoint of each namespace asked for (there is no older one)."""
        heads = self.state.kept.heads
        conf = (config or {}).get("configurable", {})
        bound = get_checkpoint_id(before) if before else None
        found = 0
        for ns in [conf["checkpoint_ns"]] if "checkpoint_ns" in conf else sorted(heads):
            head = heads.get(ns)
            item = (
                self.get_tuple(self._config(ns, head.id))
                if head and not (bound and head.id >= bound)
                else None
            )
            if item is None or (filter and any(item.metadata.get(k) != v for k, v in filter.items())):
                continue
            if limit is not None and found >= limit:
                return
            found += 1
            yield item

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    # -- writing ---------------------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        conf = config["configurable"]
        ns = conf.get("checkpoint_ns", "")
        heads = self.state.kept.heads
        if ns == "":
            # The graph moved to its next step: the subgraphs of the last one have ended
            # (what they returned is in this checkpoint), and the next step's start afresh.
            heads.clear()
        heads[ns] = _Head(
            id=checkpoint["id"],
            parent=conf.get("checkpoint_id"),
            checkpoint=self._dumps(checkpoint),
            metadata=self._dumps(get_checkpoint_metadata(config, metadata)),
            writes=[],
        )
        await self._persist()
        return self._config(ns, checkpoint["id"])

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        conf = config["configurable"]
        head = self.state.kept.heads.get(conf.get("checkpoint_ns", ""))
        if head is None or head.id != conf.get("checkpoint_id"):
            # Writes on a checkpoint this saver does not hold (one the graph has moved past;
            # with "sync" durability a checkpoint is always kept before writes on it come):
            # never read again, so not kept.
            return
        for idx, (channel, value) in enumerate(writes):
            number = WRITES_IDX_MAP.get(channel, idx)
            if number >= 0 and any(w.task_id == task_id and w.idx == number for w in head.writes):
                continue  # a node's regular writes are kept once, as LangGraph's own savers do
            head.writes = [w for w in head.writes if not (w.task_id == task_id and w.idx == number)]
            head.writes.append(_Write(task_id, number, channel, self._dumps(value), task_path))
        await self._persist()

    async def adelete_thread(self, thread_id: str) -> None:
        if thread_id == self.state.kept.thread:
            self.state.kept.heads.clear()
            await self._persist()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        raise NotImplementedError("TaskSaver keeps checkpoints of async runs only (astream, ainvoke)")

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        raise NotImplementedError("TaskSaver keeps checkpoints of async runs only (astream, ainvoke)")

    # -- keeping it in the task ------------------------------------------------------------

    async def _persist(self) -> None:
        """Write the state into the task, after any write already under way.

        Changes made together (parallel nodes finishing at once) share a write: one that
        starts after another change carries that change too, and a caller whose change has
        been written already does not write again.

        Raises:
            PayloadTooLarge: the value is above :data:`CHECKPOINT_LIMIT`, or the store refused it.
            Unavailable: the task store could not keep it.
        """
        state = self.state
        state.changes += 1
        mine = state.changes
        async with state.lock:
            if state.saved >= mine:
                return
            upto = state.changes
            value = msgspec.to_builtins(state.kept)
            size = len(_encode(value))
            if size > CHECKPOINT_LIMIT:
                raise PayloadTooLarge(
                    f"the LangGraph checkpoint of this task is {size:,} bytes, above the "
                    f"{CHECKPOINT_LIMIT:,} a task keeps: keep large data out of the graph state "
                    "(store it elsewhere and keep its name in the state)",
                    details={"bytes": size, "limit": CHECKPOINT_LIMIT},
                )
            try:
                await self.attempt.checkpoint(value)
            except PayloadTooLarge as exc:
                raise PayloadTooLarge(
                    f"the task store refused the LangGraph checkpoint of this task ({size:,} bytes): "
                    f"{exc.message}",
                    details={"bytes": size},
                ) from None
            state.saved = upto

    def _config(self, ns: str, checkpoint_id: str) -> RunnableConfig:
        conf = {"thread_id": self.state.kept.thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
        return {"configurable": conf}

    def _dumps(self, value: Any) -> Typed:
        kind, data = self.serde.dumps_typed(value)
        return kind, base64.b64encode(zlib.compress(data, 1)).decode("ascii")

    def _loads(self, typed: Typed) -> Any:
        kind, data = typed
        return self.serde.loads_typed((kind, zlib.decompress(base64.b64decode(data))))


def _load(state: _State, value: Any) -> bool:
    """Fill ``state`` from the value an earlier attempt kept; whether it holds a checkpoint
    of the graph to continue from.

    Anything else (no checkpoint yet, another thread's, an unreadable one) is left aside:
    the run then starts from the beginning.
    """
    if value is None:
        return False
    try:
        kept = msgspec.convert(value, _Kept)
        if kept.format != FORMAT or kept.thread != state.kept.thread:
            raise ValueError(f"a value of {kept.format!r} for thread {kept.thread!r}")
        for head in kept.heads.values():
            for _, data in (head.checkpoint, head.metadata, *(w.value for w in head.writes)):
                zlib.decompress(base64.b64decode(data, validate=True))
    except (msgspec.ValidationError, ValueError, binascii.Error, zlib.error) as exc:
        log.warning("the task's last checkpoint is no LangGraph checkpoint to resume from (%s)", exc)
        return False
    state.kept = kept
    state.changes = state.saved = 1  # what is in memory is what the task holds
    return "" in kept.heads
