"""Names and settings of one namespace's durable store on JetStream: its stream, bucket and consumers."""

from __future__ import annotations

from dataclasses import dataclass

from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    KeyValueConfig,
    RePublish,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

__all__ = ["StoreConfig"]


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Names and settings of one namespace's durable store (``bus.subjects`` names them)."""

    stream: str
    subjects: list[str]
    bucket: str
    ack_wait: float = 30.0
    """Seconds a delivery may go without :meth:`Delivery.working` before it is delivered again."""
    duplicate_window: float = 120.0
    replicas: int = 1
    memory: bool = False
    """Keep the stream and bucket in memory (lost when the server stops) instead of in files."""
    keep: float = 14 * 86400.0
    """Seconds the bucket keeps a key after its last write (records, outcomes, journals)."""
    updates: str = ""
    """Where the server republishes each write the bucket stored (``<updates>.<key>``): a
    watcher there hears stored values only, never a ``create`` the bucket refused, and can
    use them without reading the key again. Empty: watchers listen to the bucket's own
    subjects and read each key they hear of."""
    provisioned: bool = False
    """The stream, the bucket and the consumers were made by the admin (``a2a task setup``),
    with ``updates`` set: they are used as made and never inspected or made here. The
    bucket's stream information is not even read: asked with a subject filter, it lists
    every key of the bucket, so permissions do not grant it (listing :meth:`keys` then
    fails)."""

    @property
    def storage(self) -> StorageType:
        return StorageType.MEMORY if self.memory else StorageType.FILE

    def stream_config(self) -> StreamConfig:
        return StreamConfig(
            name=self.stream,
            subjects=self.subjects,
            retention=RetentionPolicy.WORK_QUEUE,
            storage=self.storage,
            num_replicas=self.replicas,
            duplicate_window=self.duplicate_window,
            allow_msg_ttl=True,
        )

    def bucket_config(self) -> KeyValueConfig:
        return KeyValueConfig(
            bucket=self.bucket,
            history=1,
            storage=self.storage,
            replicas=self.replicas,
            ttl=self.keep,
            direct=True,
            republish=self.republish,
        )

    @property
    def republish(self) -> RePublish | None:
        return RePublish(src=f"$KV.{self.bucket}.>", dest=f"{self.updates}.>") if self.updates else None

    def consumer_config(self, consumer: str, subject: str) -> ConsumerConfig:
        return ConsumerConfig(
            durable_name=consumer,
            name=consumer,
            filter_subject=subject,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.ack_wait,
            max_deliver=-1,
            max_ack_pending=-1,
        )
