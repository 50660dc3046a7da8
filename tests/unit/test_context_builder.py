from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from a2a import ContextBuilder, ContextFilter
from a2a.delegation import estimate_tokens
from a2a.wire import ChatMessage

ROLES = ["user", "assistant", "tool", "system"]

messages_st = st.lists(
    st.builds(
        ChatMessage,
        role=st.sampled_from(ROLES),
        content=st.text(min_size=0, max_size=400),
        created_at=st.floats(min_value=0, max_value=1000),
    ),
    max_size=60,
)
filters_st = st.builds(
    ContextFilter,
    last_messages=st.none() | st.integers(0, 80),
    roles=st.none() | st.lists(st.sampled_from(ROLES), max_size=3),
    keywords=st.none() | st.lists(st.text(min_size=1, max_size=4), max_size=2),
    include_summary=st.booleans(),
    include_workspace=st.booleans(),
    max_age_seconds=st.none() | st.integers(0, 1000),
)


@settings(max_examples=300, deadline=None)
@given(
    messages=messages_st,
    flt=filters_st,
    max_tokens=st.integers(0, 600),
    summary=st.none() | st.text(max_size=2000),
)
def test_the_context_never_exceeds_max_tokens(
    messages: list[ChatMessage], flt: ContextFilter, max_tokens: int, summary: str | None
) -> None:
    builder = ContextBuilder()
    ctx = builder.build(messages, flt, max_tokens, summary=summary, workspace_root=".", now=1000.0)
    assert ctx.total_tokens <= max_tokens
    assert ctx.total_tokens == builder.cost(ctx)
    # Kept messages are a subsequence of the input, passing every filter.
    it = iter(messages)
    assert all(any(m is n for n in it) for m in ctx.messages)
    if flt.roles is not None:
        assert all(m.role in flt.roles for m in ctx.messages)
    if flt.last_messages is not None:
        assert len(ctx.messages) <= flt.last_messages
    if flt.max_age_seconds is not None:
        assert all(m.created_at > 1000.0 - flt.max_age_seconds for m in ctx.messages)
    if flt.keywords is not None:
        assert all(any(k.lower() in m.content.lower() for k in flt.keywords) for m in ctx.messages)
    if not flt.include_summary:
        assert ctx.summary is None


@settings(max_examples=100, deadline=None)
@given(messages=messages_st, max_tokens=st.integers(0, 300))
def test_a_pluggable_counter_is_respected(messages: list[ChatMessage], max_tokens: int) -> None:
    builder = ContextBuilder(counter=len)  # one token per character
    ctx = builder.build(messages, ContextFilter(), max_tokens)
    assert sum(len(f"{m.role}: {m.content}") for m in ctx.messages) == ctx.total_tokens <= max_tokens


def test_newest_messages_win_and_the_workspace_lists_only_existing_files(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "auth.rs").write_text("fn main() {}")
    msgs = [ChatMessage(role="user", content=f"message number {i}") for i in range(10)]
    builder = ContextBuilder()
    flt = ContextFilter(
        last_messages=3,
        include_workspace=True,
        workspace_files=["src/auth.rs", "src/missing.rs", "../etc/passwd"],
    )
    ctx = builder.build(msgs, flt, 4000, workspace_root=tmp_path)
    assert [m.content for m in ctx.messages] == ["message number 7", "message number 8", "message number 9"]
    assert ctx.workspace is not None and "src/auth.rs" in ctx.workspace
    assert "missing" not in ctx.workspace and "passwd" not in ctx.workspace
    tight = builder.build(msgs, ContextFilter(), builder.count("user: message number 9") * 2)
    assert [m.content for m in tight.messages] == ["message number 8", "message number 9"]


def test_fewer_messages_than_last_n_are_all_kept() -> None:
    msgs = [ChatMessage(role="user", content=f"message number {i}") for i in range(4)]
    ctx = ContextBuilder().build(msgs, ContextFilter(last_messages=5), 4000)
    assert [m.content for m in ctx.messages] == [m.content for m in msgs]


def test_a_summary_larger_than_the_budget_is_cut_to_fit() -> None:
    builder = ContextBuilder()
    ctx = builder.build([], ContextFilter(include_summary=True), 10, summary="word " * 200)
    assert ctx.summary is not None and 0 < ctx.total_tokens <= 10


def test_the_default_counter_tracks_bpe_roughly() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("hello world") == 4  # 'hello' (2) + 'world' (2)
    assert estimate_tokens("a, b.") == 4
    prose = "The quick brown fox jumps over the lazy dog. " * 20
    assert 0.8 < estimate_tokens(prose) / (len(prose) / 4) < 1.6
