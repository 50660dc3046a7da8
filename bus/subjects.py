"""The NATS subject layout. Every subject the runtime uses is built here.

    a2a.<ns>.agent.<name>.<sender>                  requests to any instance (queue group = name)
    a2a.<ns>.inst.<name>.<instanceId>.<sender>      requests to one instance (registry routing,
                                                    probes, cancels of acknowledged calls)
    a2a.<ns>.notify.<sender>.<topic>                notifications, fan-out to every subscriber
    a2a.<ns>.cancel.<name>.<sender>                 withdrawn calls no instance acknowledged yet,
                                                    and probes asking which instance holds them
    a2a.<ns>.reply.<identity>.<runtimeId>.<reqId>   replies to one runtime's pending calls
    a2a.<ns>.audit.<agent>                          audit records (kept by a JetStream stream)
    a2a.<ns>.running.<agent>                        records of calls still running (not kept)

``<sender>`` is the identity of the runtime that publishes (its NATS user). Receivers
subscribe with a wildcard in its place and read it from the subject; nats-server
permissions (``a2a nats-config``) let each user publish only with its own name there, so
with credentials the server proves who sent a request, a notification or a cancel.
Replies need no sender token: only the instance that received a request may answer on
its reply subject (``allow_responses``).
"""

from __future__ import annotations

import re

__all__ = [
    "JETSTREAM_API",
    "Subjects",
    "identity_token",
    "inbox_prefix",
    "instance_agent",
    "is_name",
    "jetstream_acks",
    "jetstream_api",
    "validate_name",
]

ANY = "*"
"""The sender token of subscriptions: requests from anyone (the subject tells who)."""

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_TOPIC = re.compile(r"^[A-Za-z0-9_-]{1,128}(\.[A-Za-z0-9_-]{1,128})*$")


def is_name(value: str) -> bool:
    """True when ``value`` is a single subject token (letters, digits, ``_`` and ``-``)."""
    return _NAME.match(value) is not None


def validate_name(kind: str, value: str) -> str:
    """Return ``value`` if it is a single subject token (letters, digits, ``_`` and ``-``)."""
    if not _NAME.match(value):
        raise ValueError(
            f"invalid {kind} {value!r}: use 1-128 letters, digits, '_' or '-' (no dots or spaces)"
        )
    return value


def instance_agent(instance_id: str) -> str:
    """The agent name an instance id starts with (``reader-1a2b3c4d`` -> ``reader``)."""
    return instance_id.rsplit("-", 1)[0] if "-" in instance_id else instance_id


def identity_token(identity: str) -> str:
    """A NATS user name as one subject token (characters outside ``[A-Za-z0-9_-]`` become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", identity)[:128] or "anon"


def inbox_prefix(identity: str) -> str:
    """Request inboxes of one identity (JetStream replies, audit reads): ``_INBOX_<identity>``.

    Outside any namespace, like NATS's own ``_INBOX``; a server may let only that identity
    subscribe to them (``a2a nats-config``).
    """
    return f"_INBOX_{identity_token(identity)}"


class Subjects:
    """Subjects of one namespace, as the runtime named ``sender`` publishes them.

    Methods build the subjects this runtime publishes on (its own name as the sender);
    with ``sender=ANY`` they build the subscriptions that receive from everyone.
    """

    def __init__(self, namespace: str = "default", sender: str = "anon") -> None:
        self.namespace = validate_name("namespace", namespace)
        self.sender = sender if sender == ANY else identity_token(sender)
        self.root = f"a2a.{namespace}"
        self.reply_root = f"{self.root}.reply."
        """Reply subjects of runtimes start with this; other repliers are plain NATS clients."""
        self._notify_root = f"{self.root}.notify."
        self._inst_root = f"{self.root}.inst."
        # Routing builds an instance or agent subject per call: validated once, then cached.
        self._cache: dict[str, str] = {}

    def receiving(self) -> Subjects:
        """The same namespace's subjects with a wildcard sender: what receivers subscribe to."""
        return Subjects(self.namespace, ANY)

    def sender_of(self, subject: str) -> str:
        """The sender token of a request, notification or cancel subject of this namespace."""
        if subject.startswith(self._notify_root):
            start = len(self._notify_root)
            end = subject.find(".", start)
            return subject[start:end] if end > 0 else ""
        return subject[subject.rfind(".") + 1 :]

    def is_instance(self, subject: str) -> bool:
        """True for a subject addressed to one instance."""
        return subject.startswith(self._inst_root)

    def instance_of(self, subject: str) -> str | None:
        """The instance an instance subject of this namespace addresses, else None."""
        if not subject.startswith(self._inst_root):
            return None
        parts = subject[len(self._inst_root) :].split(".")
        return parts[1] if len(parts) == 3 and parts[1] else None

    def agent_of(self, subject: str) -> str:
        """The agent a request subject of this namespace addresses (the token after agent/inst)."""
        start = subject.find(".", len(self.root) + 1) + 1
        end = subject.find(".", start)
        return subject[start:end] if start > 0 and end > start else ""

    def agent(self, name: str) -> str:
        key = "a" + name
        subject = self._cache.get(key)
        if subject is None:
            name = validate_name("agent name", name)
            subject = self._remember(key, f"{self.root}.agent.{name}.{self.sender}")
        return subject

    def instance(self, instance_id: str) -> str:
        """Subject of one instance; instance ids are ``<agent name>-<suffix>``."""
        key = "i" + instance_id
        subject = self._cache.get(key)
        if subject is None:
            agent = instance_agent(validate_name("instance id", instance_id))
            subject = self._remember(key, f"{self.root}.inst.{agent}.{instance_id}.{self.sender}")
        return subject

    def cancel(self, agent: str) -> str:
        """Where a caller withdraws calls to ``agent`` that no instance acknowledged yet."""
        return f"{self.root}.cancel.{validate_name('agent name', agent)}.{self.sender}"

    def _remember(self, key: str, subject: str) -> str:
        if len(self._cache) >= 4096:  # instance ids come and go: keep the cache bounded
            self._cache.clear()
        self._cache[key] = subject
        return subject

    def instances(self, agent: str) -> str:
        """Every instance of ``agent`` (for permissions)."""
        return f"{self.root}.inst.{validate_name('agent name', agent)}.*.{self.sender}"

    def notify(self, topic: str) -> str:
        if not _TOPIC.match(topic):
            raise ValueError(f"invalid topic {topic!r}: dot-separated tokens of letters, digits, '_' or '-'")
        return f"{self._notify_root}{self.sender}.{topic}"

    def notifications(self) -> str:
        """Every notification this sender publishes (every notification, with ``ANY``)."""
        return f"{self._notify_root}{self.sender}.>"

    def reply_prefix(self, identity: str, runtime_id: str) -> str:
        return f"{self.reply_root}{identity_token(identity)}.{validate_name('runtime id', runtime_id)}."

    def runtime_prefix(self, reply: str) -> str | None:
        """The reply prefix of the runtime whose reply subject ``reply`` is, else None.

        Only ``<reply root><identity>.<runtimeId>.<requestId>`` (three non-empty tokens
        after the root) is a runtime's; anything else under the root is some other client's.
        """
        root = self.reply_root
        if not reply.startswith(root):
            return None
        start = len(root)
        first = reply.find(".", start)
        second = reply.find(".", first + 1) if first > start else -1
        if second <= first + 1 or second + 1 == len(reply) or reply.find(".", second + 1) != -1:
            return None
        return reply[: second + 1]

    def audit(self, agent: str) -> str:
        return f"{self.root}.audit.{validate_name('agent name', agent)}"

    @property
    def audit_all(self) -> str:
        return f"{self.root}.audit.>"

    def running(self, agent: str) -> str:
        """Where ``agent``'s instances say which of its calls are still running."""
        return f"{self.root}.running.{validate_name('agent name', agent)}"

    @property
    def running_all(self) -> str:
        return f"{self.root}.running.>"

    @property
    def audit_stream(self) -> str:
        """The JetStream stream that keeps the namespace's audit records."""
        return f"A2A_AUDIT_{self.namespace}"

    # -- durable tasks ------------------------------------------------------------------

    def task_queue(self, agent: str) -> str:
        """Where this sender queues durable tasks for ``agent`` (the sender is the last token)."""
        return f"{self.root}.taskq.{validate_name('agent name', agent)}.{self.sender}"

    def task_queues(self) -> str:
        """Every task queue of the namespace: the subjects the task stream keeps."""
        return f"{self.root}.taskq.*.*"

    @property
    def task_updates(self) -> str:
        """Where the server republishes each stored write of the task bucket (``.<key>``)."""
        return f"{self.root}.taskkv"

    @property
    def task_stream(self) -> str:
        """The JetStream stream that keeps the namespace's queued tasks."""
        return f"A2A_TASKQ_{self.namespace}"

    @property
    def task_bucket(self) -> str:
        """The KV bucket that keeps the namespace's task records, outcomes and checkpoints."""
        return f"A2A_TASKS_{self.namespace}"

    # -- wildcards (permissions) --------------------------------------------------------

    def calls_to_anyone(self) -> list[str]:
        """Every request and cancel this sender may send, to any agent or instance."""
        root, me = self.root, self.sender
        return [f"{root}.agent.*.{me}", f"{root}.inst.*.*.{me}", f"{root}.cancel.*.{me}"]

    def tasks_to_anyone(self) -> str:
        """Every queue this sender may queue durable tasks on, for any agent."""
        return f"{self.root}.taskq.*.{self.sender}"

    def replies(self) -> str:
        """Every reply subject of this sender's runtimes."""
        return f"{self.reply_root}{self.sender}.>"


JETSTREAM_API = "$JS.API.>"
"""Every JetStream API subject."""


def jetstream_api(operation: str, stream: str) -> str:
    """The JetStream API subject of ``operation`` (``STREAM.INFO``, ``STREAM.MSG.GET``...) on ``stream``."""
    return f"$JS.API.{operation}.{stream}"


def jetstream_acks(stream: str, consumer: str = "*") -> str:
    """The acknowledgement subjects of ``consumer``'s deliveries from ``stream`` (any consumer's: ``*``)."""
    return f"$JS.ACK.{stream}.{consumer}.>"
