"""Seed 000's context-bloat criterion, measured on real servers."""

from __future__ import annotations

import pytest

from a2a import Settings
from a2a.bench.context_bloat import MAX_CONTEXT_TOKENS, measure

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_the_coder_receives_a_small_fraction_of_a_200_message_history(settings: Settings) -> None:
    report = await measure(settings, 200)
    print(
        f"\ncontext bloat: whole history {report.full_history_tokens} tokens, coder receives "
        f"{report.received_context_tokens} + {report.task_tokens} task tokens, ratio {report.ratio:.2%}"
    )
    assert report.messages == 200 and report.full_history_tokens > 20_000
    assert 0 < report.received_messages <= 5
    assert report.received_context_tokens <= MAX_CONTEXT_TOKENS
    assert report.overhead_vs_single_agent < 0.20  # seed 000's success criterion
