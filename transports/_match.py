"""NATS subject validation and wildcard matching."""

from __future__ import annotations

__all__ = ["subject_matches", "validate_subject"]


def validate_subject(subject: str, *, wildcards: bool) -> None:
    """Raise ValueError unless ``subject`` is a valid NATS subject."""
    if not subject or any(c in subject for c in " \t\r\n"):
        raise ValueError(f"invalid subject {subject!r}")
    tokens = subject.split(".")
    for i, token in enumerate(tokens):
        if not token:
            raise ValueError(f"invalid subject {subject!r}: empty token")
        if token in ("*", ">"):
            if not wildcards:
                raise ValueError(f"wildcards are not allowed in {subject!r}")
            if token == ">" and i != len(tokens) - 1:
                raise ValueError(f"'>' must be the last token in {subject!r}")
        elif "*" in token or ">" in token:
            raise ValueError(f"invalid wildcard token in {subject!r}")


def subject_matches(pattern: str, subject: str) -> bool:
    """True when ``subject`` (no wildcards) matches ``pattern`` (may hold ``*`` and ``>``)."""
    if pattern == subject:
        return True
    p_tokens = pattern.split(".")
    s_tokens = subject.split(".")
    for i, p in enumerate(p_tokens):
        if p == ">":
            return len(s_tokens) > i
        if i >= len(s_tokens):
            return False
        if p != "*" and p != s_tokens[i]:
            return False
    return len(p_tokens) == len(s_tokens)
