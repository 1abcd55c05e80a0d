"""Prompt assembly within a budget, and stop handling while streaming (no model needed)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.llm import StopScanner, TextStream
from bot.prompt import SPEAKER_LINE, PromptBuilder
from memory.archetypes import ContextPlan
from memory.conversation import StoredMessage
from memory.episodic import Episode, EpisodeHit
from memory.layers.base import TRANSCRIPT, Section
from memory.layers.episodes import episode_item
from memory.layers.turns import turn_item
from memory.recall import ContextBundle

AT = datetime(2026, 11, 1, tzinfo=UTC)


def words(text: str) -> int:
    return len(text.split()) + text.count("\n")


def bundle(n_turns: int = 0, n_episodes: int = 0) -> ContextBundle:
    plan = ContextPlan(None, 0.0, turns=20, vectors=15, similarity_threshold=0.5, triple_depth=1)
    turns = [
        StoredMessage(
            i,
            "g",
            "console",
            str(i),
            "c",
            "u",
            "bob" if i % 2 else "hippobot",
            i % 2 == 0,
            f"turn number {i} " + "blah " * 5,
            None,
            AT,
        )
        for i in range(n_turns)
    ]
    hits = [
        EpisodeHit(
            Episode(100 + i, "g", "c", "u", 100 + i, None, f"memory {i} " + "detail " * 8, 0.5, False, AT),
            0.9 - i * 0.01,
        )
        for i in range(n_episodes)
    ]
    return ContextBundle(
        "g",
        plan,
        (
            Section("turns", "Conversation", tuple(turn_item(m) for m in turns), placement=TRANSCRIPT, priority=0),
            Section("episodes", "What {bot} remembers", tuple(episode_item(h) for h in hits), priority=20),
        ),
    )


def builder(budget: int, render_chat=None) -> PromptBuilder:
    return PromptBuilder("hippobot", "hippobot is helpful.", budget, words, render_chat)


def test_transcript_ends_with_the_bot_label_and_stops_at_any_speaker() -> None:
    prompt = builder(500).build(bundle(4, 2), "bob", "what's up?")
    assert prompt.text.endswith("bob: what's up?\nhippobot:")
    assert "\nbob:" in prompt.stop and "\nhippobot:" in prompt.stop
    assert prompt.stop_pattern is SPEAKER_LINE
    assert "memory 0" in prompt.text and prompt.episodes_used == (100, 101)


def test_the_budget_is_respected_and_the_best_memories_and_newest_turns_win() -> None:
    prompt = builder(120).build(bundle(30, 15), "bob", "hello")
    assert prompt.tokens <= 120
    assert prompt.episodes_used and prompt.episodes_used == tuple(range(100, 100 + len(prompt.episodes_used)))
    assert "turn number 29" in prompt.text and "turn number 0 " not in prompt.text
    assert prompt.turns_used < 30


def test_an_overlong_message_keeps_its_end() -> None:
    text = "start " + "word " * 400 + "the final question?"
    prompt = builder(100).build(bundle(), "bob", text)
    assert prompt.tokens <= 110
    assert "the final question?" in prompt.text and "start" not in prompt.text


def test_chat_template_rendering_alternates_roles() -> None:
    seen = {}

    def render(messages):
        seen["m"] = messages
        return "rendered"

    prompt = builder(500, render).build(bundle(3, 1), "bob", "hi")
    roles = [m["role"] for m in seen["m"]]
    assert roles[0] == "system" and "memory 0" in seen["m"][0]["content"]
    assert all(a != b for a, b in zip(roles[1:], roles[2:]))
    assert roles[-1] == "user" and seen["m"][-1]["content"].endswith("bob: hi")
    assert prompt.text == "rendered" and prompt.stop == ()


def stream(scanner: StopScanner, pieces: list[str], *, ended: bool = True) -> tuple[str, str]:
    """Feed text through the engine's TextStream; return (what was shown, the final text)."""
    ts = TextStream(scanner)
    text, shown = "", []
    for piece in pieces:
        text += piece
        shown.append(ts.update(text))
        if ts.stopped:
            break
    shown.append(ts.finish(ended=ended))
    return "".join(shown), ts.text


def test_a_stop_string_is_never_streamed_even_split_across_tokens() -> None:
    scanner = StopScanner(stop=("\nbob:",))
    shown, final = stream(scanner, ["Sure", ", I can", " help.", "\n", "bo", "b:", " thanks"])
    assert final == "Sure, I can help." and shown == final


def test_the_speaker_pattern_stops_at_an_unknown_speaker_label() -> None:
    scanner = StopScanner(stop=(), pattern=SPEAKER_LINE)
    shown, final = stream(scanner, ["Hello!", "\n", "Mary", " Jane", ":", " hi"])
    assert final == "Hello!" and shown == "Hello!"


def test_the_speaker_pattern_stops_at_a_speaker_in_a_flattened_memory_line() -> None:
    """Memory lines read "ana: ... / bo: ..."; a base model copies that and writes bo's turn on its own line."""
    scanner = StopScanner(stop=(), pattern=SPEAKER_LINE)
    shown, final = stream(scanner, ["A cat", " /", " as", "ker", ":", " What does he eat"])
    assert final == "A cat" and shown == "A cat"
    shown, final = stream(scanner, ["yes / Oscar", " Wilde: would she"])
    assert final == shown == "yes"
    shown, final = stream(scanner, ["Milk / water ", "and cheese, ", "at 12:30."])
    assert final == shown == "Milk / water and cheese, at 12:30."


def test_text_without_a_stop_streams_whole() -> None:
    scanner = StopScanner(stop=("\nbob:",), pattern=SPEAKER_LINE)
    shown, final = stream(scanner, ["It is ", "12:30 ", "now, ", "see you."])
    assert shown == final == "It is 12:30 now, see you."


def test_running_out_of_tokens_drops_a_half_written_speaker_label() -> None:
    scanner = StopScanner(stop=("\nbob:",), pattern=SPEAKER_LINE)
    shown, final = stream(scanner, ["Fine, thanks.", "\n", "Bo"], ended=False)
    assert shown == final == "Fine, thanks."
    shown, final = stream(scanner, ["Fine, thanks.", "\n", "Bye"], ended=True)
    assert final == "Fine, thanks.\nBye" and shown == final
