"""Recall: best first, above threshold, one scope only, plus the recent-turns window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from memory.archetypes import ContextPlan
from memory.conversation import ConversationStore, NewMessage
from memory.embed import MiniLMEmbedder
from memory.episodic import EpisodicStore, NewEpisode
from memory.errors import ScopeError
from memory.episodic import WriteGate
from memory.layers.episodes import EpisodesLayer, HybridConfig
from memory.layers.turns import TurnsLayer
from memory.recall import Recall, recall_query

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

FACTS = [
    "My sister Lena lives in Lisbon and works as an architect",
    "I adopted a grey cat called Miso last spring",
    "My favourite band is Radiohead, I saw them in 2017",
    "I'm training for the Berlin marathon in September",
    "We had pasta carbonara for dinner on Friday",
]


def recaller(pool: asyncpg.Pool, embedder: MiniLMEmbedder, **config: Any) -> Recall:
    return Recall(
        [
            TurnsLayer(ConversationStore(pool)),
            EpisodesLayer(EpisodicStore(pool), WriteGate(), embedder, config=HybridConfig(**config)),
        ]
    )


async def gather(recall: Recall, scope: str, vector, plan, **kw):
    return await recall.gather(recall_query(scope, "query", vector, plan, T0 + timedelta(days=1), **kw))


def plan(vectors: int = 5, threshold: float = 0.0, turns: int = 4) -> ContextPlan:
    return ContextPlan(None, 0.0, turns=turns, vectors=vectors, similarity_threshold=threshold, triple_depth=1)


async def seed(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder, scope: str, texts: list[str], channel: str = "c1"
) -> list[int]:
    conversations, episodes = ConversationStore(pool), EpisodicStore(pool)
    vectors = await embedder.embed_many(texts)
    ids = []
    for i, (text, vector) in enumerate(zip(texts, vectors)):
        at = T0 + timedelta(minutes=i)
        m = await conversations.add(NewMessage(scope, "import", f"{scope}-{i}", channel, "u1", "Ana", text, at))
        await episodes.add_many([NewEpisode(scope, channel, "u1", m.id, f"Ana: {text}", vector, at)])
        ids.append(m.id)
    return ids


async def test_episodes_come_best_first(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    await seed(pool, embedder, "g1", FACTS)
    recall = recaller(pool, embedder)
    bundle = await gather(recall, "g1", await embedder.embed("what's my cat's name?"), plan())
    sims = [h.similarity for h in bundle.episodes]
    assert sims == sorted(sims, reverse=True)
    assert "Miso" in bundle.episodes[0].episode.content
    assert len(bundle.episodes) == 5


async def test_threshold_and_k_limit_what_comes_back(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    await seed(pool, embedder, "g1", FACTS)
    recall = recaller(pool, embedder, keep_top=0)  # the threshold alone decides
    vector = await embedder.embed("what's my cat's name?")
    strict = await gather(recall, "g1", vector, plan(vectors=5, threshold=0.72))
    assert [("Miso" in h.episode.content) for h in strict.episodes] == [True]
    assert all(h.similarity >= 0.72 for h in strict.episodes)
    assert len((await gather(recall, "g1", vector, plan(vectors=2))).episodes) == 2
    assert (await gather(recall, "g1", vector, plan(vectors=0))).episodes == []
    # By default a list's leaders stay even below the threshold: the best match by words, speaker or time.
    lenient = await gather(recaller(pool, embedder), "g1", vector, plan(vectors=5, threshold=0.72))
    assert len(lenient.episodes) > 1 and "Miso" in lenient.episodes[0].episode.content


async def test_recall_never_crosses_scopes(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    await seed(pool, embedder, "guild-a", FACTS)
    await seed(pool, embedder, "guild-b", ["My dog Rex loves the beach", "I adopted a cat named Pixel"])
    recall = recaller(pool, embedder)
    vector = await embedder.embed("what's my cat's name?")
    b = await gather(recall, "guild-b", vector, plan(vectors=15))
    assert len(b.episodes) == 2 and all(h.episode.scope == "guild-b" for h in b.episodes)
    assert all("Miso" not in h.episode.content for h in b.episodes)
    turns = await gather(recall, "guild-b", vector, plan(vectors=0, turns=20), channel_id="c1")
    assert len(turns.turns) == 2 and all(m.scope == "guild-b" for m in turns.turns)
    empty = await gather(recall, "dm:42", vector, plan(vectors=15), channel_id="c1")
    assert empty.episodes == [] and empty.turns == []


async def test_a_missing_scope_is_an_error_not_all_scopes(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    recall = recaller(pool, embedder)
    for scope in ("", "   ", None):
        with pytest.raises(ScopeError):
            await gather(recall, scope, await embedder.embed("x"), plan())  # type: ignore[arg-type]  # None on purpose


async def test_recent_turns_are_the_plans_window_oldest_first_and_not_repeated_as_episodes(
    pool: asyncpg.Pool, embedder: MiniLMEmbedder
) -> None:
    ids = await seed(pool, embedder, "g1", FACTS)
    await seed(pool, embedder, "g1-other", ["noise"], channel="c1")
    recall = recaller(pool, embedder)
    bundle = await gather(
        recall,
        "g1",
        await embedder.embed("tell me about my cat"),
        plan(vectors=5, turns=3),
        channel_id="c1",
        before_message_id=ids[-1],
    )
    assert [m.id for m in bundle.turns] == ids[1:4]
    in_window = set(ids[1:4])
    assert not any(set(h.episode.message_ids) & in_window for h in bundle.episodes)
    assert all(h.episode.message_id != ids[-1] for h in bundle.episodes)


@pytest.mark.parametrize("exact_rows", [5_000, 4])
async def test_a_small_scope_in_a_big_table_still_gets_k_episodes(
    db_url: str, pool: asyncpg.Pool, exact_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small audience is scanned exactly; a larger one goes through HNSW, and a short answer there (the
    scope filtered after the scan) falls back to an exact scan of the audience."""
    import asyncpg as apg

    import memory.episodic

    monkeypatch.setattr(memory.episodic, "EXACT_SCAN_ROWS", exact_rows)
    if exact_rows < 8:  # only the fixed floor decides: the small scope goes through HNSW
        monkeypatch.setattr(memory.episodic, "EXACT_SCAN_PER_TABLE_ROW", 0)
    import numpy as np

    from memory.db import _init_connection

    rng = np.random.default_rng(1)
    centre = rng.normal(size=384).astype(np.float32)
    conversations, episodes = ConversationStore(pool), EpisodicStore(pool)
    rows = []
    for scope, n, sign in (("big", 600, 1.0), ("small", 8, -1.0)):
        for i in range(n):
            m = await conversations.add(NewMessage(scope, "import", f"{scope}{i}", "c", "u", "u", "x", T0))
            v = sign * centre + rng.normal(scale=0.3, size=384).astype(np.float32)
            rows.append(NewEpisode(scope, "c", "u", m.id, "x", v / np.linalg.norm(v), T0))
    await episodes.add_many(rows)
    await pool.execute("DROP INDEX episodes_scope_idx")
    # Leave the planner nothing but the HNSW index, as on a large table.
    forced = await apg.create_pool(
        db_url,
        min_size=1,
        max_size=2,
        init=_init_connection,
        server_settings={"enable_seqscan": "off", "enable_bitmapscan": "off"},
    )
    try:
        query = centre / np.linalg.norm(centre)
        hits = await EpisodicStore(forced).search("small", query, 5)
        assert len(hits) == 5 and all(h.episode.scope == "small" for h in hits)
        assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)
    finally:
        await forced.close()


async def test_a_question_naming_a_time_finds_that_stretch(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    conversations, episodes = ConversationStore(pool), EpisodicStore(pool)
    lines = [
        (datetime(2025, 3, 10, tzinfo=UTC), "We went hiking near the lake, lovely weather"),
        (datetime(2025, 5, 12, tzinfo=UTC), "Spent the whole weekend painting the fence"),
        (datetime(2025, 8, 2, tzinfo=UTC), "We went hiking in the mountains this time"),
    ]
    for i, (at, text) in enumerate(lines):
        m = await conversations.add(NewMessage("g1", "import", f"t{i}", "c1", "u1", "Ana", text, at))
        await episodes.add_many(
            [NewEpisode("g1", "c1", "u1", m.id, f"Ana: {text}", await embedder.embed(f"Ana: {text}"), at)]
        )
    recall = recaller(pool, embedder)
    question = "what did Ana do in May?"
    bundle = await recall.gather(
        recall_query("g1", question, await embedder.embed(question), plan(vectors=1), datetime(2026, 11, 1, tzinfo=UTC))
    )
    assert "fence" in bundle.episodes[0].episode.content  # the May of the history, a year before 'now'


async def test_a_question_naming_a_speaker_finds_their_own_words(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    """Everyone talks about hobbies; asked about Oscar's, Oscar's own line is recalled, not only his fillers
    (whose keys, "Oscar: ...", are near any question naming him)."""
    conversations, episodes = ConversationStore(pool), EpisodicStore(pool)
    lines = [
        ("Oscar", "later all"),
        ("Oscar", "hmm interesting"),
        ("Julia", "I'm learning guitar from youtube"),
        ("Kofi", "doing watercolours every sunday now"),
        ("Oscar", "been practising the cello every evening"),
        ("Julia", "growing tomatoes on my balcony is my new thing"),
        ("Oscar", "wait really?"),
        ("Oscar", "same here"),
        ("Julia", "my guitar teacher says I'm improving"),
        ("Oscar", "ok ok"),
    ]
    for i, (who, text) in enumerate(lines):
        at = T0 + timedelta(minutes=i)
        m = await conversations.add(NewMessage("g1", "import", f"s{i}", "c1", f"u-{who}", who, text, at))
        await episodes.add_many(
            [NewEpisode("g1", "c1", f"u-{who}", m.id, f"{who}: {text}", await embedder.embed(f"{who}: {text}"), at)]
        )
    question = "Which instrument is Oscar learning?"
    layer = EpisodesLayer(EpisodicStore(pool), WriteGate(), embedder)
    query = recall_query("g1", question, await embedder.embed(question), plan(vectors=3), T0)
    named, rest = await layer._named_speakers(query)
    assert named == ["u-Oscar"] and "Oscar" not in rest
    theirs = await layer._by_speakers(query, named, rest, 3)
    assert all(h.episode.author_id == "u-Oscar" for h in theirs)
    assert "cello" in theirs[0].episode.content  # asked without his name, his fillers do not lead
    bundle = await recaller(pool, embedder).gather(query)
    assert "cello" in bundle.episodes[0].episode.content
