"""The token account of one handling: what it used, what its calls in flight hold, what is left."""

from __future__ import annotations

from bus.errors import BudgetExceeded
from bus.wire import TokenUsage

__all__ = ["Budget"]


class Budget:
    """Tokens one handler and its settled children used, against the request's budget (None: unlimited)."""

    __slots__ = ("held", "limit", "usage")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.usage = TokenUsage()
        self.held = 0
        """Tokens reserved by calls in flight (explicit amounts only)."""

    @property
    def left(self) -> int | None:
        if self.limit is None:
            return None
        return self.limit - self.usage.total - self.held

    def spend(self, agent: str, prompt: int, completion: int) -> None:
        """Add tokens the handler consumed.

        Raises:
            BudgetExceeded: the budget is now overspent.
        """
        usage = self.usage
        usage.prompt += prompt
        usage.completion += completion
        usage.total += prompt + completion
        left = self.left
        if left is not None and left < 0:
            raise BudgetExceeded(
                f"{agent} used {usage.total} tokens of a {self.limit}-token budget",
                details={"used": usage.total, "budget": self.limit},
            )

    def reserve(self, requested: int | None) -> tuple[int | None, int]:
        """A child call's budget, and how much of this one it holds until it settles.

        An explicit ``requested`` amount is held. Without one, the child may use all that
        is left but holds nothing: calls made in parallel (a framework running several
        tool calls at once) share what is left instead of the first taking it all. Such
        siblings may together spend more than was left; once settled, the overspend
        refuses the handler's next call and its next :meth:`spend`.

        Raises:
            BudgetExceeded: nothing is left, or ``requested`` is more than is left.
        """
        left = self.left
        if left is None:
            return requested, 0
        if requested is None:
            if left <= 0:
                raise BudgetExceeded(
                    f"no budget left for a call: {self.usage.total} of {self.limit} used",
                    details={"left": left},
                )
            return left, 0
        if requested <= 0 or requested > left:
            raise BudgetExceeded(
                f"a call needing {requested} tokens cannot be paid for: {left} of the budget left",
                details={"requested": requested, "left": left},
            )
        self.held += requested
        return requested, requested

    def settle(self, held: int, used: TokenUsage | None) -> None:
        """A child call ended: release what it held, count what it used."""
        self.held -= held
        if used is not None:
            usage = self.usage
            usage.prompt += used.prompt
            usage.completion += used.completion
            usage.total += used.total
