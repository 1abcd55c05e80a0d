"""What of a recalled hit reaches the prompt (issue 33.1): its own turn, the neighbours likely to carry the
answer, each turn once, within the plan's word budget; an item's sources are the turns it shows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from bot.grounding import NOT_TOLD, grounded_or_not_told
from memory.archetypes import ContextPlan
from memory.conversation import ConversationStore, NewMessage
from memory.embed import MiniLMEmbedder
from memory.episodic import EpisodicStore, NewEpisode, WriteGate
from memory.layers.base import MemoryItem
from memory.layers.episodes import EpisodesLayer, HybridConfig, asks, only_questions
from memory.recall import Recall, recall_query

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
SPEAKERS = {"Ana": "u-ana", "Ben": "u-ben"}

FENCE = (
    "Ana",
    "I spent the whole weekend repainting the garden fence, three coats of a dark green the shop calls "
    "Forest Night, and my arms still ache from holding the brush over my head for hours.",
)
BAKING = (
    "Ana",
    "Then on Sunday evening I tried the new sourdough recipe from my aunt, the one with rye flour and "
    "a very long cold proof in the fridge, and it came out flat as a pancake again.",
)


async def chat(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, scope: str, lines: list[tuple[str, str]], *, episodes: bool = True
) -> list[int]:
    """The lines as one channel's conversation, a minute apart; statements become episodes (as the import's
    gate would admit them; none with ``episodes`` False: found by their words only), questions stay in the log
    only."""
    conversations, store = ConversationStore(pool), EpisodicStore(pool)
    ids = []
    for i, (name, text) in enumerate(lines):
        at = T0 + timedelta(minutes=i)
        m = await conversations.add(NewMessage(scope, "import", f"{scope}-{i}", "c1", SPEAKERS[name], name, text, at))
        if episodes and not only_questions(text):
            vector = await embedder.embed(f"{name}: {text}")
            await store.add_many([NewEpisode(scope, "c1", SPEAKERS[name], m.id, f"{name}: {text}", vector, at)])
        ids.append(m.id)
    return ids


def layer(pool: asyncpg.Pool, embedder: MiniLMEmbedder, **config: Any) -> EpisodesLayer:
    return EpisodesLayer(EpisodicStore(pool), WriteGate(), embedder, config=HybridConfig(**config))


def plan(vectors: int = 5, memory_words: int | None = None) -> ContextPlan:
    return ContextPlan(
        None, 0.0, turns=4, vectors=vectors, similarity_threshold=0.0, triple_depth=1, memory_words=memory_words
    )


async def recall(
    episodes: EpisodesLayer, embedder: MiniLMEmbedder, scope: str, text: str, p: ContextPlan | None = None
) -> list[MemoryItem]:
    query = recall_query(scope, text, await embedder.embed(text), p or plan(), T0 + timedelta(days=1))
    bundle = await Recall([episodes]).gather(query)
    return bundle.items(preamble=False)


def shown(item: MemoryItem) -> set[int]:
    return {s.id for s in item.sources}


def words(items: list[MemoryItem]) -> int:
    return sum(len(i.text.split()) for i in items)


def test_a_turn_asks_when_one_of_its_sentences_is_a_question() -> None:
    assert asks("Which charity are you running for?")
    assert asks("How did Copenhagen go? We were so busy carrying sofas I didn't ask.")
    assert asks("Is it the news I think it is?? :)")
    assert not asks("Yeah, St Clare's.")
    assert not asks("see https://example.com/?q=1 for the results")


async def test_a_short_reply_after_a_question_hit_comes_with_it(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    ids = await chat(
        pool,
        embedder,
        "g1",
        [FENCE, ("Ana", "Which charity are you running the half marathon for?"), ("Ben", "Yeah, St Clare's."), BAKING],
        episodes=False,
    )  # found by its words alone: the question is the hit
    [first] = await recall(layer(pool, embedder), embedder, "g1", "which charity is the half marathon for?")
    # The hit asks: the reply after it holds the answer, and is shown (and is a source) with it; the long
    # turn of the same speaker before it is not.
    assert first.message_ids[0] == ids[1]
    assert first.text == "Ana: Which charity are you running the half marathon for?\nBen: Yeah, St Clare's."
    assert shown(first) == {ids[1], ids[2]}


async def test_a_hit_that_states_its_answer_comes_without_its_long_neighbours(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    ids = await chat(
        pool, embedder, "g1", [FENCE, ("Ben", "I booked the ferry to Santander for the 14th of August."), BAKING]
    )
    question = "when is Ben's ferry to Santander?"
    [alone] = [i for i in await recall(layer(pool, embedder), embedder, "g1", question) if ids[1] in shown(i)]
    assert alone.text == "Ben: I booked the ferry to Santander for the 14th of August."
    assert shown(alone) == {ids[1]}
    # As recall was before: every neighbour, each a source, at many times the words.
    everything = await recall(layer(pool, embedder, context="all", word_budget=None), embedder, "g1", question)
    [before] = [i for i in everything if ids[1] in shown(i)]
    assert shown(before) == set(ids) and before.text.count("\n") == 2


async def test_a_hit_already_shown_as_a_neighbour_is_not_shown_again(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    ids = await chat(
        pool,
        embedder,
        "g1",
        [
            ("Ana", "Did the plumber ever fix the boiler in the end?"),
            ("Ben", "The plumber fixed the boiler on Tuesday, it was a broken valve."),
            BAKING,
        ],
    )
    items = await recall(layer(pool, embedder), embedder, "g1", "when did the plumber fix the boiler?")
    holding = [i for i in items if ids[1] in shown(i)]
    assert len(holding) == 1, "the answer is one item's, once"
    assert holding[0].text.count("The plumber fixed the boiler") == 1
    assert shown(holding[0]) == {ids[0], ids[1]}


async def test_the_same_words_again_are_shown_once_with_both_sources(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    said = ("Ben", "The ferry to Santander leaves Portsmouth at nine.")
    ids = await chat(pool, embedder, "g1", [said, FENCE, BAKING, said])
    items = await recall(layer(pool, embedder), embedder, "g1", "when does the ferry to Santander leave?")
    holding = [i for i in items if ids[0] in shown(i) or ids[3] in shown(i)]
    assert len(holding) == 1
    assert shown(holding[0]) == {ids[0], ids[3]}
    assert holding[0].text == "Ben: The ferry to Santander leaves Portsmouth at nine."


async def test_the_plans_word_budget_bounds_the_words_shown(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    lines = [
        (
            "Ben" if i % 2 else "Ana",
            f"The ferry to Santander number {i} was late again, {'it ' * 10}said the "
            f"crew, and we waited in the car park for hours.",
        )
        for i in range(10)
    ]
    await chat(pool, embedder, "g1", lines)
    episodes = layer(pool, embedder, word_budget=1000)
    question = "was the ferry to Santander late?"
    loose = await recall(episodes, embedder, "g1", question, plan(vectors=8))
    assert len(loose) == 8 and words(loose) > 100
    tight = await recall(episodes, embedder, "g1", question, plan(vectors=8, memory_words=70))
    assert 0 < words(tight) <= 70  # the plan's budget wins over the layer's
    assert len(tight) == 2
    assert [i.message_ids[0] for i in tight] == [i.message_ids[0] for i in loose[:2]]  # the best ones
    # No plan budget: the layer's default.
    assert (
        words(
            await recall(
                layer(pool, embedder, word_budget=100),
                embedder,
                "g1",
                question,
                replace(plan(vectors=8), memory_words=None),
            )
        )
        <= 100
    )


async def test_a_recalled_turn_shows_the_day_its_relative_words_name(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    ids = await chat(
        pool, embedder, "g1", [FENCE, ("Ben", "We adopted a greyhound called Pepper last Sunday!"), BAKING]
    )
    items = await recall(layer(pool, embedder), embedder, "g1", "when did Ben adopt Pepper?")
    [pepper] = [i for i in items if ids[1] in shown(i)]
    # said on Sunday 1 November 2026: "last Sunday" is the 25th of October, in the words the reader reads
    assert "last Sunday (25 October 2026)" in pepper.prompt_line
    # what was said, for grounding and sources: a day recall worked out is not something anyone said (with it
    # in the text, "When did Oscar visit Kyoto?" -> "12 March." was grounded in an unrelated memory's day)
    assert pepper.text.endswith("called Pepper last Sunday!")
    asked = "when did Ben adopt Pepper?"
    assert grounded_or_not_told("25 October 2026.", asked, items) == "25 October 2026."
    # asked about a trip nobody mentioned (the guard lets no memory's date ground it), the day recall worked out
    # for Pepper grounds nothing
    assert grounded_or_not_told("25 October 2026.", "when did Ben visit Lisbon?", items, dates=False) == NOT_TOLD
