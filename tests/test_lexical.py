"""Lexical search over the message log: words and speakers, BM25 order, scope and audience."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np

from memory.conversation import ConversationStore, NewMessage
from memory.embed import DIMENSIONS
from memory.lexical import LexicalSearch, candidate_terms

T0 = datetime(2026, 5, 1, 18, 0, tzinfo=UTC)


class NoEmbedder:
    """The embedder of a layer whose test only searches words and forgets: nothing is embedded, and an attempt
    fails the test."""

    dimensions = DIMENSIONS

    async def embed(self, text: str) -> np.ndarray:
        raise AssertionError(f"nothing is embedded in this test, yet {text!r} was")

    async def embed_many(self, texts: list[str]) -> np.ndarray:
        raise AssertionError(f"nothing is embedded in this test, yet {len(texts)} text(s) were")


async def store(
    pool: asyncpg.Pool,
    scope: str,
    lines: list[tuple[str, str]],
    *,
    visible_in: str | None = None,
    channel: str = "chat",
) -> list[int]:
    conversations = ConversationStore(pool)
    ids = []
    for i, (who, text) in enumerate(lines):
        m = await conversations.add(
            NewMessage(
                scope,
                "import",
                f"{scope}-{channel}-{i}",
                channel,
                f"u-{who}",
                who,
                text,
                T0 + timedelta(minutes=i),
                visible_in=visible_in,
            )
        )
        ids.append(m.id)
    return ids


CHAT = [
    ("Maya", "Morning Leo! How was the weekend?"),
    ("Leo", "Pretty good Maya, I finally repaired the bike chain"),
    ("Maya", "Nice. I went to the pottery class again, made a wonky bowl"),
    ("Leo", "Haha Maya, a wonky bowl is still a bowl"),
    ("Maya", "Also my sister Ines is moving to Rotterdam in June"),
    ("Leo", "Rotterdam! That's a big move"),
]


async def test_words_find_the_message_and_rare_words_weigh_more(pool: asyncpg.Pool) -> None:
    ids = await store(pool, "g1", CHAT)
    search = LexicalSearch(pool)
    hits = await search.search("g1", "Where is Maya's sister relocating to?", 3)
    assert hits[0].message.id == ids[4]  # 'sister' is rare; 'Maya' is in half the messages
    hits = await search.search("g1", "what did Leo fix on his bicycle chain", 2)
    assert hits[0].message.id == ids[1]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_the_speaker_is_searchable(pool: asyncpg.Pool) -> None:
    ids = await store(pool, "g1", CHAT)
    hits = await LexicalSearch(pool).search("g1", "Leo", 10)
    assert {h.message.id for h in hits} >= {ids[1], ids[3], ids[5]}


async def test_never_another_scope_or_a_restricted_channel(pool: asyncpg.Pool) -> None:
    await store(pool, "g1", CHAT)
    secret = await store(
        pool, "g1", [("Maya", "the pottery studio password is kiln42")], visible_in="staff", channel="staff"
    )
    other = await store(pool, "g2", [("Zed", "pottery pottery pottery")])
    search = LexicalSearch(pool)
    found = {h.message.id for h in await search.search("g1", "pottery password", 10)}
    assert secret[0] not in found and other[0] not in found
    inside = {h.message.id for h in await search.search("g1", "pottery password", 10, visible_channel="staff")}
    assert secret[0] in inside and other[0] not in inside


async def test_nothing_to_search_for_gives_nothing(pool: asyncpg.Pool) -> None:
    await store(pool, "g1", CHAT)
    search = LexicalSearch(pool)
    assert await search.search("g1", "the of and", 5) == []  # stop words only
    assert await search.search("g1", "'; DROP TABLE messages; --", 5) == []
    assert await search.search("g1", "O'Brien's \\\\ back\\slash", 5) == []


async def test_forgetting_drops_the_cached_word_statistics(pool: asyncpg.Pool) -> None:
    from memory.episodic import EpisodicStore, WriteGate
    from memory.layers.episodes import EpisodesLayer
    from tests.test_match_stats import provenance_on

    ids = await store(pool, "g1", CHAT)
    layer = EpisodesLayer(EpisodicStore(pool), WriteGate(), embedder=NoEmbedder())
    assert await layer.lexical.search("g1", "Rotterdam", 5)
    assert any("rotterdam" in s.df for s in layer.lexical._stats.values())
    await provenance_on(pool, (layer,)).forget_message("g1", ids[4])
    await provenance_on(pool, (layer,)).forget_message("g1", ids[5])
    assert await layer.lexical.search("g1", "Rotterdam", 5) == []
    assert not any("rotterdam" in s.df for s in layer.lexical._stats.values())


def test_candidate_words_are_the_rarest_within_the_match_budget() -> None:
    df = {"maya": 3000, "sister": 40, "move": 900, "rotterdam": 2}
    assert candidate_terms(["maya", "sister"], df, budget=5000) == ["maya", "sister"]  # fits: all, in order
    assert candidate_terms(["maya", "sister", "move", "rotterdam"], df, budget=1000) == ["rotterdam", "sister", "move"]
    assert candidate_terms(["maya", "move"], df, budget=100) == ["move"]  # the rarest word always
    assert candidate_terms(["maya", "unseen"], df, budget=100) == ["unseen"]  # a new word counts as rare


async def test_a_word_too_common_for_the_budget_still_counts_in_the_score(pool: asyncpg.Pool) -> None:
    ids = await store(pool, "g1", CHAT)
    search = LexicalSearch(pool, match_budget=2)  # 'maya' (in 4 messages) leaves the candidate query
    hits = await search.search("g1", "Maya bowl", 5)
    assert {h.message.id for h in hits} == {ids[2], ids[3]}  # the messages with 'bowl' only
    bowl_only = {h.message.id: h.score for h in await search.search("g1", "bowl", 5)}
    assert all(h.score > bowl_only[h.message.id] for h in hits)  # 'maya' is in both: it still adds
    everything = await LexicalSearch(pool).search("g1", "Maya bowl", 5)
    assert {h.message.id for h in everything} > {ids[2], ids[3]}


async def test_expired_word_statistics_are_recounted_in_the_background(pool: asyncpg.Pool) -> None:
    import asyncio

    ids = await store(pool, "g1", CHAT)
    search = LexicalSearch(pool, stats_ttl_s=0.0)
    assert await search.search("g1", "bike", 3)
    first = search._stats[("g1", None)]
    await store(pool, "g1", [("Leo", "the kayak is ready")], channel="other")
    hits = await search.search("g1", "kayak", 3)  # answered at once with the old counts ...
    assert [h.message.id for h in hits] == [ids[-1] + 1]
    for _ in range(100):  # ... while a task recounts them
        if search._stats[("g1", None)] is not first:
            break
        await asyncio.sleep(0.02)
    assert search._stats[("g1", None)].df.get("kayak") == 1
    slow = asyncio.create_task(asyncio.sleep(60))  # a recount still running when the app closes ...
    search._refreshing[("g1", "slow")] = slow
    await search.close()  # ... is cancelled before the pool goes
    assert slow.cancelled()
