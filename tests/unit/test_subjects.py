from __future__ import annotations

import pytest

from bus import Subjects
from transports import subject_matches, validate_subject


@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        ("a.b.c", "a.b.c", True),
        ("a.*.c", "a.b.c", True),
        ("a.*.c", "a.b.d", False),
        ("a.>", "a.b.c", True),
        ("a.>", "a", False),
        ("a.b", "a.b.c", False),
        ("a.b.c", "a.b", False),
        ("*", "a", True),
        ("*", "a.b", False),
        (">", "a.b", True),
    ],
)
def test_subject_matching_follows_nats_rules(pattern: str, subject: str, expected: bool) -> None:
    assert subject_matches(pattern, subject) is expected


@pytest.mark.parametrize("bad", ["", "a..b", "a b", "a.>.b", "a.b*"])
def test_invalid_subjects_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        validate_subject(bad, wildcards=True)


def test_subject_layout() -> None:
    s = Subjects("prod", "alice@corp")
    assert s.agent("planner") == "a2a.prod.agent.planner.alice_corp"
    assert s.instance("planner-1a2b") == "a2a.prod.inst.planner.planner-1a2b.alice_corp"
    assert s.instance("code-writer-1a2b") == "a2a.prod.inst.code-writer.code-writer-1a2b.alice_corp"
    assert s.instances("planner") == "a2a.prod.inst.planner.*.alice_corp"
    assert s.notify("build.done") == "a2a.prod.notify.alice_corp.build.done"
    assert s.cancel("planner") == "a2a.prod.cancel.planner.alice_corp"
    assert s.reply_prefix("alice@corp", "r1") == "a2a.prod.reply.alice_corp.r1."
    assert s.audit("reader") == "a2a.prod.audit.reader"
    for bad in ("a.b", "x y", "", "*"):
        with pytest.raises(ValueError):
            s.agent(bad)
    anyone = s.receiving()
    assert anyone.agent("planner") == "a2a.prod.agent.planner.*"
    assert anyone.notify("build.done") == "a2a.prod.notify.*.build.done"


def test_the_sender_and_agent_are_read_back_from_subjects() -> None:
    s = Subjects("prod", "bob")
    for subject in (s.agent("planner"), s.instance("planner-1a2b"), s.cancel("planner")):
        assert s.sender_of(subject) == "bob"
    assert s.sender_of(s.notify("build.done")) == "bob"
    assert s.agent_of(s.agent("planner")) == "planner"
    assert s.agent_of(s.instance("code-writer-1a2b")) == "code-writer"
    assert s.is_instance(s.instance("planner-1a2b")) and not s.is_instance(s.agent("planner"))


@pytest.mark.parametrize(
    ("reply", "prefix"),
    [
        ("a2a.prod.reply.alice.r1.c42", "a2a.prod.reply.alice.r1."),
        ("a2a.prod.reply.alice.r1", None),  # no correlation token
        ("a2a.prod.reply.alice", None),
        ("a2a.prod.reply.alice.r1.c42.x", None),  # one token too many
        ("a2a.prod.reply..r1.c42", None),
        ("a2a.prod.reply.alice..c42", None),
        ("a2a.prod.reply.alice.r1.", None),
        ("a2a.other.reply.alice.r1.c42", None),  # another namespace
        ("_INBOX.abc.c42", None),
    ],
)
def test_only_runtime_shaped_reply_subjects_name_a_runtime(reply: str, prefix: str | None) -> None:
    assert Subjects("prod").runtime_prefix(reply) == prefix
