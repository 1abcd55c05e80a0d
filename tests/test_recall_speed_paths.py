"""The fast paths of recall (issue 33.2) return what the slow ones did: the exact scan and HNSW agree on a
small scope, the audience's size picks the path, BM25 ranked in the server is the formula, and the message
log's full-text index keeps no long pending list."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest

import memory.episodic
from bot.app import App
from memory.conversation import ConversationStore, NewMessage
from memory.db import _init_connection
from memory.episodic import EpisodicStore, NewEpisode, exact_scan_limit
from memory.lexical import BM25_B, BM25_K1, LexicalSearch
from tests.test_brain import graph

T0 = datetime(2026, 5, 1, 18, 0, tzinfo=UTC)


async def _episodes(
    pool: asyncpg.Pool, scope: str, n: int, rng: np.random.Generator, *, near_first: int = 0
) -> np.ndarray:
    """``n`` episodes in clusters around 8 centres (as chat is); the first ``near_first`` close to centre 0."""
    conversations, store = ConversationStore(pool), EpisodicStore(pool)
    centres = rng.normal(size=(8, 384)).astype(np.float32)
    picks = np.concatenate([np.zeros(near_first, dtype=int), rng.integers(1, 8, size=n - near_first)])
    spread = np.where(np.arange(n) < near_first, 0.05, 0.5)[:, None].astype(np.float32)
    vectors = centres[picks] + spread * rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = []
    for i in range(n):
        m = await conversations.add(
            NewMessage(scope, "import", f"{scope}{i}", "c", "u", "U", f"line {i}", T0 + timedelta(minutes=i))
        )
        rows.append(NewEpisode(scope, "c", "u", m.id, f"U: line {i}", vectors[i], T0 + timedelta(minutes=i)))
    await store.add_many(rows)
    return centres


def _path_taken(store: EpisodicStore, scope: str) -> bool:
    """Whether the store's last decision for ``scope``'s public audience was the exact scan."""
    return store._exact[(scope, None)][1]


async def test_the_exact_scan_and_hnsw_find_the_same_top_items_on_a_small_scope(
    db_url: str, pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    centres = await _episodes(pool, "g1", 300, rng, near_first=10)  # a clear top 10, in a clear order
    query = centres[0] / np.linalg.norm(centres[0])
    exact_store = EpisodicStore(pool)
    exact = await exact_store.search("g1", query, 10)
    assert _path_taken(exact_store, "g1")
    monkeypatch.setattr(memory.episodic, "EXACT_SCAN_ROWS", 10)
    monkeypatch.setattr(memory.episodic, "EXACT_SCAN_PER_TABLE_ROW", 0)
    # the planner would sort 300 rows rather than use the index: leave it only the index, as on a big table
    await pool.execute("DROP INDEX episodes_scope_idx; DROP INDEX episodes_scope_visible_idx")
    forced = await asyncpg.create_pool(
        db_url,
        min_size=1,
        max_size=2,
        init=_init_connection,
        server_settings={"enable_seqscan": "off", "enable_bitmapscan": "off"},
    )
    try:
        indexed_store = EpisodicStore(forced)
        indexed = await indexed_store.search("g1", query, 10)
        plan = "\n".join(
            r[0]
            for r in await forced.fetch(
                "EXPLAIN SELECT id FROM episodes WHERE scope = 'g1' ORDER BY embedding <=> $1 LIMIT 10", query
            )
        )
    finally:
        await forced.close()
    assert not _path_taken(indexed_store, "g1") and "episodes_embedding_idx" in plan
    assert [h.episode.id for h in indexed] == [h.episode.id for h in exact]
    assert [h.similarity for h in indexed] == pytest.approx([h.similarity for h in exact], abs=1e-6)


async def test_a_scope_over_the_crossover_takes_the_index_path(
    pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    await _episodes(pool, "big", 60, rng)
    await _episodes(pool, "small", 5, rng)
    await pool.execute("ANALYZE episodes")
    monkeypatch.setattr(memory.episodic, "EXACT_SCAN_ROWS", 20)
    monkeypatch.setattr(memory.episodic, "EXACT_SCAN_PER_TABLE_ROW", 0)
    store = EpisodicStore(pool)
    query = rng.normal(size=384).astype(np.float32)
    assert len(await store.search("big", query, 5)) == 5
    assert len(await store.search("small", query, 5)) == 5
    assert not _path_taken(store, "big") and _path_taken(store, "small")


def test_the_crossover_grows_with_the_table() -> None:
    """An exact scan costs per audience row; a filtered HNSW scan per row of the table it walks past."""
    assert exact_scan_limit(0) == memory.episodic.EXACT_SCAN_ROWS
    assert exact_scan_limit(100_000) > exact_scan_limit(10_000) >= memory.episodic.EXACT_SCAN_ROWS
    assert exact_scan_limit(1_000_000) == math.isqrt(memory.episodic.EXACT_SCAN_PER_TABLE_ROW * 1_000_000)


async def test_the_audience_size_is_counted_once_a_minute(pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    await _episodes(pool, "g1", 3, rng)
    store = EpisodicStore(pool)
    query = rng.normal(size=384).astype(np.float32)
    await store.search("g1", query, 3)
    first = store._exact[("g1", None)]
    await store.search("g1", query, 3)
    assert store._exact[("g1", None)] is first
    monkeypatch.setattr(memory.episodic, "AUDIENCE_TTL_S", 0.0)
    await store.search("g1", query, 3)
    assert store._exact[("g1", None)] is not first


CHAT = [
    ("Maya", "Morning Leo! How was the weekend?"),
    ("Leo", "Pretty good Maya, I finally repaired the bike chain, the bike rides well"),
    ("Maya", "Nice. I went to the pottery class again, made a wonky bowl"),
    ("Leo", "Haha Maya, a wonky bowl is still a bowl, a bowl is a bowl"),
    ("Maya", "Also my sister Ines is moving to Rotterdam in June"),
    ("Ines", "Rotterdam! That's a big move for a bowl collector"),
]


async def test_bm25_ranked_in_the_server_is_the_formula(pool: asyncpg.Pool) -> None:
    conversations = ConversationStore(pool)
    for i, (who, text) in enumerate(CHAT):
        await conversations.add(
            NewMessage("g1", "import", f"m{i}", "c", f"u-{who}", who, text, T0 + timedelta(minutes=i))
        )
    question = "did Maya make a bowl or fix the bike?"
    hits = await LexicalSearch(pool).search("g1", question, 10)
    terms = await pool.fetchval("SELECT array_agg(DISTINCT lexeme) FROM unnest(to_tsvector('english', $1))", question)
    docs = {
        r["id"]: {x["lexeme"]: len(x["positions"]) for x in r["lexemes"]}
        for r in await pool.fetch(
            """SELECT id, (SELECT array_agg(jsonb_build_object('lexeme', lexeme, 'positions', positions))
                       FROM unnest(search_tsv)) AS lexemes FROM messages WHERE scope = 'g1'"""
        )
    }
    avg_len = sum(len(d) for d in docs.values()) / len(docs)
    df = {t: sum(t in d for d in docs.values()) for t in terms}

    def bm25(doc: dict[str, int]) -> float:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc) / avg_len)
        return sum(
            math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) * doc[t] * (BM25_K1 + 1) / (doc[t] + norm)
            for t in terms
            if t in doc
        )

    expected = sorted(((bm25(d), i) for i, d in docs.items() if bm25(d) > 0), key=lambda p: (-p[0], p[1]))
    assert [h.message.id for h in hits] == [i for _, i in expected]
    assert [h.score for h in hits] == pytest.approx([s for s, _ in expected], rel=1e-9)
    assert len({round(h.score, 6) for h in hits}) > 2  # term frequencies and lengths do change the order


async def test_the_full_text_index_keeps_its_pending_list_short(pool: asyncpg.Pool) -> None:
    options = await pool.fetchval("SELECT reloptions FROM pg_class WHERE relname = 'messages_search_idx'")
    assert "gin_pending_list_limit=64" in options


async def test_the_graph_walk_in_one_query_gives_each_fact_its_distance(app: App) -> None:
    """A fact's hop is one more than the nearer of its ends' distance from the question's things."""
    from tests.test_semantic import T0 as AT0
    from tests.test_semantic import stored

    semantic = graph(app)
    for text in ("My sister Lena lives in Lisbon", "Lisbon has great pastries", "Pastries need butter"):
        await semantic.absorb(await stored(app, text), AT0)
    facts = await semantic.facts_for("g1", "my sister", author_id="u-ana", depth=3, now=AT0)
    hops = {(f.subject_name, f.relation, f.object_name): f.hops for f in facts}
    assert hops[("sister", "live_in", "lisbon")] == 1
    assert hops[("lisbon", "has", "pastry")] == 2
    assert max(hops.values()) <= 3
    two = await semantic.facts_for("g1", "my sister", author_id="u-ana", depth=2, now=AT0)
    assert all(f.hops <= 2 for f in two) and ("lisbon", "has", "pastry") in {
        (f.subject_name, f.relation, f.object_name) for f in two
    }
