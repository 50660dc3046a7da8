"""The NATS subject layout. Every subject the runtime uses is built here.

    a2a.<ns>.agent.<name>                           requests to any instance (queue group = name)
    a2a.<ns>.inst.<name>.<instanceId>               requests to one instance (registry routing, probes)
    a2a.<ns>.notify.<topic>                         notifications, fan-out to every subscriber
    a2a.<ns>.reply.<identity>.<runtimeId>.<corrId>  replies to one runtime's pending calls
    a2a.<ns>.cancel                                 withdrawn calls, so callees stop working on them
    a2a.<ns>.audit.<agent>                          audit records (kept by a JetStream stream)

The agent name inside instance subjects and the NATS identity inside reply subjects
let nats-server permissions be granted per agent (``a2a nats-config``).
"""

from __future__ import annotations

import re

__all__ = ["Subjects", "identity_token", "instance_agent", "is_name", "validate_name"]

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


class Subjects:
    """Subjects of one namespace."""

    def __init__(self, namespace: str = "default") -> None:
        self.namespace = validate_name("namespace", namespace)
        self.root = f"a2a.{namespace}"
        self.reply_root = f"{self.root}.reply."
        """Reply subjects of runtimes start with this; other repliers are plain NATS clients."""
        # Routing builds an instance or agent subject per call: validated once, then cached.
        self._cache: dict[str, str] = {}

    def agent(self, name: str) -> str:
        key = "a" + name
        subject = self._cache.get(key)
        if subject is None:
            subject = self._remember(key, f"{self.root}.agent.{validate_name('agent name', name)}")
        return subject

    def instance(self, instance_id: str) -> str:
        """Subject of one instance; instance ids are ``<agent name>-<suffix>``."""
        key = "i" + instance_id
        subject = self._cache.get(key)
        if subject is None:
            agent = instance_agent(validate_name("instance id", instance_id))
            subject = self._remember(key, f"{self.root}.inst.{agent}.{instance_id}")
        return subject

    def _remember(self, key: str, subject: str) -> str:
        if len(self._cache) >= 4096:  # instance ids come and go: keep the cache bounded
            self._cache.clear()
        self._cache[key] = subject
        return subject

    def instances(self, agent: str) -> str:
        return f"{self.root}.inst.{validate_name('agent name', agent)}.*"

    def notify(self, topic: str) -> str:
        if not _TOPIC.match(topic):
            raise ValueError(f"invalid topic {topic!r}: dot-separated tokens of letters, digits, '_' or '-'")
        return f"{self.root}.notify.{topic}"

    def reply_prefix(self, identity: str, runtime_id: str) -> str:
        return f"{self.reply_root}{identity_token(identity)}.{validate_name('runtime id', runtime_id)}."

    def runtime_prefix(self, reply: str) -> str | None:
        """The reply prefix of the runtime whose reply subject ``reply`` is, else None.

        Only ``<reply root><identity>.<runtimeId>.<correlationId>`` (three non-empty tokens
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

    @property
    def cancel(self) -> str:
        return f"{self.root}.cancel"

    def audit(self, agent: str) -> str:
        return f"{self.root}.audit.{validate_name('agent name', agent)}"

    @property
    def audit_all(self) -> str:
        return f"{self.root}.audit.>"
