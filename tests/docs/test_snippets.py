"""Every python and bash fence of README.md and docs/ runs as written, or says why it cannot.

See :mod:`tests.docs.snippets` for the directives and how each kind of fence runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from .snippets import ROOT, RUN, PageRun, pages, parse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PAGES = [p for p in pages() if any(s.runs or "file" in s.directives for s in parse(p))]


def test_every_fence_runs_or_says_why_not() -> None:
    unmarked, reasons = [], Counter[str]()
    for page in pages():
        for snippet in parse(page):
            reason = snippet.directives.get("illustrative")
            if reason is not None:
                if not reason:
                    unmarked.append(f"{snippet.where}: 'illustrative' needs a reason")
                reasons[reason] += 1
            if "file" in snippet.directives and not snippet.directives["file"]:
                unmarked.append(f"{snippet.where}: 'file' needs a name")
            if (
                snippet.lang not in RUN
                and not snippet.lang
                and snippet.code.strip().startswith(("$ ", "a2a "))
            ):
                unmarked.append(f"{snippet.where}: a shell fence without a language is never run")
    assert not unmarked, "\n".join(unmarked)
    assert sum(reasons.values()) <= 30, f"more fences illustrative than expected: {reasons}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page(page: Path, nats_url: str, redis_url: str, tmp_path: Path) -> None:
    run = PageRun(str(page.relative_to(ROOT)), tmp_path, nats_url, redis_url)
    try:
        for snippet in parse(page):
            run.run(snippet)
    finally:
        run.close()
