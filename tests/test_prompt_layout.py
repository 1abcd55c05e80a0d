"""The prompt's layout keeps what does not change between messages first (issue 33.3), so the engine's prefix
cache holds it: the header, the bot's standing preamble lines, then what was chosen for this message."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.prompt import PromptBuilder
from memory.archetypes import ContextPlan
from memory.layers.base import MEMORY, PREAMBLE, MemoryItem, Section
from memory.recall import ContextBundle

AT = datetime(2026, 11, 1, tzinfo=UTC)
PLAN = ContextPlan(None, 0.0, turns=4, vectors=5, similarity_threshold=0.5, triple_depth=1)


def words(text: str) -> int:
    return len(text.split()) + text.count("\n")


def bundle(views: list[str], memories: list[str]) -> ContextBundle:
    """The persona layer's shape: its self-description and what people think (no score: the same for every
    message), and the views nearest the message (scored)."""
    preamble = (
        MemoryItem("persona", None, "s", "Self-description: I like tea.", ()),
        *(MemoryItem("opinion", 0.8, v, f"View: {v}", ()) for v in views),
        MemoryItem("stances", None, "t", "What people here think: cats (2 like it)", ()),
    )
    return ContextBundle(
        "g",
        PLAN,
        (
            Section("persona", "", preamble, placement=PREAMBLE, priority=1),
            Section(
                "episodes",
                "What {bot} remembers",
                tuple(
                    MemoryItem("episode", 0.9, m, f"[2026-10-01] {m}", (i + 1,), AT, ref=i + 1)
                    for i, m in enumerate(memories)
                ),
                placement=MEMORY,
                priority=20,
            ),
        ),
    )


def test_the_standing_preamble_comes_before_the_lines_chosen_for_the_message() -> None:
    builder = PromptBuilder("hippobot", "hippobot is helpful.", 2000, words)
    text = builder.build(bundle(["tea is best"], ["ana: I have a cat"]), "ana", "hi").text
    order = [
        text.index(s)
        for s in (
            "hippobot is helpful.",
            "Self-description",
            "What people here think",
            "View: tea is best",
            "ana: I have a cat",
            "ana: hi",
        )
    ]
    assert order == sorted(order)


def test_two_messages_share_the_prompt_up_to_what_was_chosen_for_each() -> None:
    builder = PromptBuilder("hippobot", "hippobot is helpful.", 2000, words)
    first = builder.build(bundle(["tea is best", "rain is fine"], ["ana: I have a cat"]), "ana", "hi").text
    second = builder.build(
        bundle(["rain is fine", "tea is best"], ["ana: my sister lives in Porto"]), "ana", "where does my sister live?"
    ).text
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    assert first[:shared].endswith("What people here think: cats (2 like it)\nView: ")


def test_best_last_puts_the_best_memory_right_before_the_conversation() -> None:
    memories = ["ana: I have a cat", "ben: my sister lives in Porto", "cleo: rain again"]  # best first
    first = PromptBuilder("hippobot", "hippobot is helpful.", 2000, words).build(bundle([], memories), "ana", "hi")
    last = PromptBuilder("hippobot", "hippobot is helpful.", 2000, words, memory_order="best_last").build(
        bundle([], memories), "ana", "hi"
    )
    at = [first.text.index(m) for m in memories]
    assert at == sorted(at)
    at = [last.text.index(m) for m in memories]
    assert at == sorted(at, reverse=True)
    assert last.text.index("ana: I have a cat") < last.text.index("Conversation:")
    assert last.used == first.used, "the same memories are used, only their order changes"
