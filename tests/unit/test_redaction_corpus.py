"""The default redactor measured on a labelled corpus (tests/unit/data/redaction_corpus.jsonl).

Each line is ``{"text": ..., "secrets": [...], "keep": [...]}``: ``secrets`` are substrings
that must be gone after redaction (empty for prose, which must come out unchanged), ``keep``
substrings of a secret line that must survive (the redactor hides the secret, not the sentence).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from a2a.delegation.redact import Redactor, Rule

CORPUS = Path(__file__).parent / "data" / "redaction_corpus.jsonl"
MIN_RECALL = 0.98
MIN_PROSE_UNCHANGED = 0.95
MIN_CONTEXT_KEPT = 0.95

redactor = Redactor()


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def test_corpus_is_large_and_mixed() -> None:
    rows = _rows()
    secrets = sum(1 for r in rows if r["secrets"])
    assert len(rows) >= 200 and secrets >= 100 and len(rows) - secrets >= 100
    for r in rows:
        assert all(s in r["text"] for s in r["secrets"] + r.get("keep", [])), r


def test_recall_on_secrets_and_precision_on_prose() -> None:
    rows = _rows()
    secret_rows = [r for r in rows if r["secrets"]]
    prose_rows = [r for r in rows if not r["secrets"]]
    missed, cut, changed = [], [], []
    for r in secret_rows:
        out = redactor.redact(r["text"])
        if any(s in out for s in r["secrets"]):
            missed.append((r["text"], out))
        if any(k not in out for k in r.get("keep", [])):
            cut.append((r["text"], out))
    for r in prose_rows:
        out = redactor.redact(r["text"])
        if out != r["text"]:
            changed.append((r["text"], out))
    recall = 1 - len(missed) / len(secret_rows)
    unchanged = 1 - len(changed) / len(prose_rows)
    kept = 1 - len(cut) / len(secret_rows)
    figures = (
        f"corpus {len(rows)} lines: recall on {len(secret_rows)} secret lines {recall:.3f}, "
        f"{len(prose_rows)} prose lines unchanged {unchanged:.3f}, context kept on secret lines {kept:.3f}"
    )
    print(figures)
    details = "\n".join(f"  {a!r} -> {b!r}" for a, b in missed + changed + cut)
    assert recall >= MIN_RECALL, f"{figures}\n{details}"
    assert unchanged >= MIN_PROSE_UNCHANGED, f"{figures}\n{details}"
    assert kept >= MIN_CONTEXT_KEPT, f"{figures}\n{details}"


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["text"][:40])
def test_redacting_twice_changes_nothing_more(row: dict[str, Any]) -> None:
    once = redactor.redact(row["text"])
    found: dict[str, int] = {}
    assert redactor.redact(once, found) == once and found == {}


def test_the_quick_checks_skip_nothing_on_the_corpus() -> None:
    """Each rule's precheck and screen are only shortcuts: without them the result is the same."""
    plain = Redactor(Rule(r.name, r.pattern, r.replacement, r.accept) for r in redactor.rules)
    for row in _rows():
        assert redactor.redact(row["text"]) == plain.redact(row["text"]), row["text"]
