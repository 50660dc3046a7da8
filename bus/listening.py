"""What one agent instance's endpoint listens on, and how it stops: taking work first, then the rest."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from transports import Message, Subscription, Taker

from .link import Link

__all__ = ["Listening"]

Handler = Callable[[Message], Awaitable[None]]


class Listening:
    """The subscriptions of one instance: the agent's queue group and topics (new work), this
    instance's subject and the agent's cancels (the calls in hand), and the in-process
    hand-over of what this process publishes to them."""

    def __init__(self, link: Link, agent: str, instance_id: str, topics: Sequence[str]) -> None:
        self.link = link
        self.agent = agent
        self.instance_id = instance_id
        self.topics = topics
        self._taking: list[Subscription] = []
        """The agent's queue group and topics: new work, dropped by :meth:`stop_taking`."""
        self._held: list[Subscription] = []
        """This instance's subject and the agent's cancels: kept until :meth:`close`."""
        self._local: list[str] = []

    async def open(self, on_message: Handler, on_cancel: Handler, take: Taker) -> None:
        """Subscribe: messages to ``on_message`` (``take``, its shortcut: see
        :meth:`transports.Transport.subscribe`), cancel notices to ``on_cancel``."""
        link = self.link
        subjects = link.subjects
        anyone = subjects.receiving()
        agent = anyone.agent(self.agent)
        self._taking.append(await link.subscribe(agent, on_message, queue=self.agent, take=take))
        self._held.append(await link.subscribe(anyone.instance(self.instance_id), on_message, take=take))
        self._held.append(await link.subscribe(anyone.cancel(self.agent), on_cancel))
        for topic in self.topics:
            self._taking.append(await link.subscribe(anyone.notify(topic), on_message, queue=self.agent))
        # What this process publishes to its own endpoints is handed over directly.
        for subject in (subjects.agent(self.agent), subjects.instance(self.instance_id)):
            link.attach(subject, on_message)
            self._local.append(subject)

    async def stop_taking(self) -> None:
        """Take no new work from the agent's queue group or topics. This instance's subject,
        the agent's cancels and the in-process hand-over stay until :meth:`close`: the calls
        in hand are still probed, acknowledged, withdrawn and answered while they finish (a
        graceful stop), and may call this agent on the way."""
        for sub in self._taking:
            await sub.drain()  # what the server routed here before it knew is still handled
        self._taking.clear()

    async def close(self) -> None:
        await self.stop_taking()
        for subject in self._local:
            self.link.detach(subject)
        self._local.clear()
        for sub in self._held:
            await sub.unsubscribe()
        self._held.clear()
