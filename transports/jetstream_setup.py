"""Making the durable store's stream, bucket and consumers: what an admin runs (``a2a task setup``)."""

from __future__ import annotations

import nats.js.errors

from ._nats import NatsTransport
from .jetstream_config import StoreConfig
from .jetstream_publish import jetstream_errors

__all__ = ["provision"]


async def provision(transport: NatsTransport, config: StoreConfig, consumers: dict[str, str]) -> list[str]:
    """Make (or bring to ``config``) the stream and the consumers, and make the bucket if
    missing: what an admin runs before agents that may not make them start.

    ``consumers`` maps each consumer's name to the subject it takes. Returns one line per
    thing done, for the operator.

    Raises:
        TransportError: no JetStream, or this user may not make them.
    """
    js = transport.nc.jetstream(timeout=10.0)
    done: list[str] = []
    with jetstream_errors("provisioning the task store"):
        stream = config.stream_config()
        try:
            await js.stream_info(config.stream)
            await js.update_stream(stream)
            done.append(f"stream {config.stream}: updated")
        except nats.js.errors.NotFoundError:
            await js.add_stream(stream)
            done.append(f"stream {config.stream}: created")
        try:
            await js.key_value(config.bucket)
            bucket = (await js.stream_info(f"KV_{config.bucket}")).config
            if config.republish is not None and bucket.republish != config.republish:
                bucket.republish = config.republish
                await js.update_stream(bucket)
                done.append(f"bucket {config.bucket}: its writes now republished on {config.updates}.>")
            else:
                done.append(f"bucket {config.bucket}: exists (kept as it is)")
        except nats.js.errors.BucketNotFoundError:
            await js.create_key_value(config.bucket_config())
            done.append(f"bucket {config.bucket}: created")
        for name, subject in sorted(consumers.items()):
            await js.add_consumer(config.stream, config.consumer_config(name, subject))
            done.append(f"consumer {config.stream}/{name} on {subject}: ready")
    return done
