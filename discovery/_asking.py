"""A local view's entries as routing reads them, noting what it asks about that the view
does not follow yet (``follow="used"``): the view's loop follows that soon after
(``discovery.view``), and meanwhile the reads answer from what the entries hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import anyio

from ._entry import ViewEntry
from ._interest import Interest
from ._ranking import RankedEntries
from .registry import Registry

__all__ = ["Asking"]


class Asking(RankedEntries):
    """:class:`RankedEntries` whose reads ask for what the view does not follow.

    Args:
        registry: the registry the view follows.
        trust_floor: as :class:`RankedEntries`.
        follow_all: the view follows every instance of the registry (nothing to ask for).
    """

    def __init__(self, registry: Registry, *, trust_floor: float, follow_all: bool) -> None:
        super().__init__(trust_floor=trust_floor)
        self.ready = anyio.Event()
        """Set once the view has loaded what it follows, the first time."""
        self._interest = Interest(registry, everything=follow_all)
        """What the view follows."""
        self._asked = Interest(registry, everything=False)
        """What synchronous reads missed: followed by the view's loop, soon after."""
        self._woken = anyio.Event()
        """Set when the view's loop has something new to follow."""

    def follows(self, capabilities: Iterable[str] = (), agents: Iterable[str] = ()) -> bool:
        """Whether the view has loaded these capabilities and agents (never before it is ready)."""
        return self.ready.is_set() and self._interest.covers(capabilities, agents)

    def best(
        self,
        capabilities: Sequence[str],
        *,
        exclude: Iterable[str] = (),
        allowed: Callable[[str], bool] | None = None,
    ) -> ViewEntry | None:
        """As :meth:`RankedEntries.best`; a capability not followed is followed soon after."""
        self._ask_for(capabilities=capabilities)
        return super().best(capabilities, exclude=exclude, allowed=allowed)

    def reads_compact(self, agent: str, instance: str | None = None) -> bool:
        """As :meth:`RankedEntries.reads_compact`; for an agent, only once the view follows it
        (False meanwhile: see :meth:`learn`)."""
        if instance is None and not self.follows(agents=(agent,)):
            return False
        return super().reads_compact(agent, instance)

    def learn(self, agent: str) -> None:
        """Follow ``agent`` soon (a caller's full-form request to it was answered)."""
        self._ask_for(agents=(agent,))

    def _ask_for(self, *, capabilities: Sequence[str] = (), agents: Sequence[str] = ()) -> None:
        """Have the view's loop follow these capabilities and agents soon, those it does not yet."""
        if self._interest.covers(capabilities, agents):
            return
        if self._asked.add(capabilities, agents) is not None:
            self._woken.set()

    def entries(self) -> list[ViewEntry]:
        """Every entry; a view following what it uses follows the whole registry from then on."""
        if not self._interest.everything and not self._asked.everything:
            self._asked.everything = True
            self._woken.set()
        return super().entries()
