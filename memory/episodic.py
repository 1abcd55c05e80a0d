"""Episodic memory, first version (seed 001, HEI-NW): episodes keyed by embedding.

An episode is a user turn with the bot's reply, or one imported message. Its
key is the MiniLM vector of the user's message (computed once, shared with
archetype routing). Search is cosine, always within one scope and audience,
best first: an exact scan of a small audience, pgvector's HNSW index for a
large one. The write gate scores salience from surprise,
novelty and pinning (seed 001, 5.1); replay and decay arrive with the dream
cycle.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg
import numpy as np

from memory.conversation import require_scope
from memory.db import iterative_scans
from memory.sources import SourceRef

# How a top-k is found: exactly (the audience's rows through the B-tree on scope, then a sort: recall 1.0)
# or through HNSW, whichever is cheaper for the audience's size. An exact scan costs about 0.9 us a row; a
# filtered HNSW scan (pgvector >= 0.8 runs it iteratively, memory/db.py) costs about 0.55 ms x (table rows
# / audience rows) for 50 rows, since it walks past every other scope's neighbours (measured on 2 cores at
# 100,000 episodes, bench/README.md "exact or HNSW": audience 5,000 exact 4.2 ms, HNSW 10.9 ms; 8,000 8.2
# and 6.9; 20,000 19.6 and 2.8). They cross where rows^2 ~ 600 x table rows: an audience of up to
# max(EXACT_SCAN_ROWS, sqrt(EXACT_SCAN_PER_TABLE_ROW x table rows)) is scanned exactly (7,700 at 100,000
# episodes, 24,500 at a million). The audience's size is counted at most once a minute (AUDIENCE_TTL_S):
# the count cost more than the search, and a stale one only picks the slower of two right answers.
EXACT_SCAN_ROWS = 5_000
EXACT_SCAN_PER_TABLE_ROW = 600
AUDIENCE_TTL_S = 60.0
# With iterative scans the server's hnsw.ef_search (pgvector's default 40) is the first candidate list: at
# 100,000 episodes recall@10 was 0.46 with 40 and 0.45 with 100 (near-ties in bench/pipeline.py's store).
HNSW_EF_SEARCH_POST_FILTER = 200

_COLUMNS = (
    "id, scope, channel_id, author_id, message_id, reply_message_id, content, salience, pinned, created_at, visible_in"
)


@dataclass(frozen=True)
class Episode:
    id: int
    scope: str
    channel_id: str
    author_id: str
    message_id: int
    reply_message_id: int | None
    content: str
    salience: float
    pinned: bool
    created_at: datetime
    visible_in: str | None = None

    @property
    def message_ids(self) -> tuple[int, ...]:
        """The messages this episode was derived from (its provenance)."""
        return (self.message_id,) if self.reply_message_id is None else (self.message_id, self.reply_message_id)


@dataclass(frozen=True)
class EpisodeHit:
    episode: Episode
    similarity: float
    sources: tuple[SourceRef, ...] = ()  # its messages, with the ids their users know


@dataclass(frozen=True)
class NewEpisode:
    scope: str
    channel_id: str
    author_id: str
    message_id: int
    content: str
    embedding: np.ndarray
    created_at: datetime
    reply_message_id: int | None = None
    surprise: float | None = None
    novelty: float | None = None
    salience: float = 0.0
    pinned: bool = False
    visible_in: str | None = None  # the narrowest visibility of its messages


@dataclass(frozen=True)
class WriteGate:
    """S = alpha * surprise' + beta * novelty + delta * pin (seed 001, 5.1).

    Surprise (nats per token) is squashed to [0, 1) as s / (s + 2), so a
    reply the model found as hard as a random word (~8 nats) counts 0.8.
    """

    alpha: float = 0.4
    beta: float = 0.6
    delta: float = 1.0
    tau: float = 0.0  # what enters the episodic index: S >= tau (the message log keeps everything)

    def admits(self, salience: float, pinned: bool = False) -> bool:
        return pinned or salience >= self.tau

    def score(self, surprise: float | None, novelty: float | None, pin: bool = False) -> float:
        s = 0.0 if surprise is None or not math.isfinite(surprise) else max(surprise, 0.0)
        n = 0.0 if novelty is None else min(max(novelty, 0.0), 1.0)
        return self.alpha * (s / (s + 2.0)) + self.beta * n + self.delta * float(pin)


def _episode(row: asyncpg.Record) -> Episode:
    return Episode(**{k: row[k] for k in Episode.__dataclass_fields__})


def _sources(row: asyncpg.Record) -> tuple[SourceRef, ...]:
    """The person's message: the bot's reply (reply_message_id) is provenance, never a source of what was said."""
    return (
        SourceRef(
            row["message_id"],
            row["m_external"],
            row["m_channel"],
            row["m_source"],
            row["m_author"],
            row["m_channel_name"],
        ),
    )


def exact_scan_limit(table_rows: int) -> int:
    """The largest audience an exact scan serves faster than HNSW in a table of ``table_rows`` episodes."""
    return max(EXACT_SCAN_ROWS, math.isqrt(EXACT_SCAN_PER_TABLE_ROW * max(table_rows, 0)))


def novelty(nearest_similarity: float | None) -> float:
    """Seed 001's novelty, 1 - max cos, from a similarity on the (1 + cos) / 2 scale (1.0 with nothing near)."""
    if nearest_similarity is None:
        return 1.0
    return min(max(2.0 * (1.0 - nearest_similarity), 0.0), 1.0)


class EpisodicStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._exact: dict[tuple[str, str | None], tuple[float, bool]] = {}  # audience -> (when, exact is cheaper)
        self._iterative_scans: bool | None = None  # the pool's, read once

    async def _exact_is_cheaper(self, conn: asyncpg.Connection, scope: str, visible_channel: str | None) -> bool:
        """Whether this audience is searched faster by an exact scan than through HNSW (see EXACT_SCAN_ROWS),
        from a count at most AUDIENCE_TTL_S old."""
        key = (scope, visible_channel)
        cached = self._exact.get(key)
        if cached is not None and time.monotonic() - cached[0] < AUDIENCE_TTL_S:
            return cached[1]
        table = await conn.fetchval(
            "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'episodes'::regclass"
        )
        limit = exact_scan_limit(table)
        audience = await conn.fetchval(
            """SELECT count(*) FROM (SELECT 1 FROM episodes WHERE scope = $1
               AND (visible_in IS NULL OR visible_in = $2::text) LIMIT $3) s""",
            scope,
            visible_channel,
            limit + 1,
        )
        exact = audience <= exact_scan_limit(max(table, audience))
        if len(self._exact) > 10_000:  # many audiences (scopes x restricted channels): start over
            self._exact.clear()
        self._exact[key] = (time.monotonic(), exact)
        return exact

    async def _iterative(self, conn: asyncpg.Connection) -> bool:
        if self._iterative_scans is None:
            self._iterative_scans = await iterative_scans(conn)
        return self._iterative_scans

    @property
    def pool(self) -> asyncpg.Pool:
        return self._pool

    async def nearest_other(
        self, scope: str, vector: np.ndarray, message_id: int, conn: asyncpg.Connection | None = None
    ) -> float | None:
        """Similarity of this scope's nearest episode that is not this message's (for the write gate's novelty)."""
        require_scope(scope)
        return await (conn or self._pool).fetchval(
            """SELECT 1 - (embedding <=> $2) / 2 FROM episodes WHERE scope = $1 AND message_id <> $3
               ORDER BY embedding <=> $2 LIMIT 1""",
            scope,
            np.asarray(vector, dtype=np.float32),
            message_id,
        )

    async def add_many(self, episodes: Sequence[NewEpisode], conn: asyncpg.Connection | None = None) -> int:
        """Insert episodes (one per source message; a repeat is ignored). Returns rows written."""
        if not episodes:
            return 0
        for e in episodes:
            require_scope(e.scope)
        rows = [
            (
                e.scope,
                e.channel_id,
                e.author_id,
                e.message_id,
                e.reply_message_id,
                e.content,
                np.asarray(e.embedding, dtype=np.float32),
                e.surprise,
                e.novelty,
                e.salience,
                e.pinned,
                e.created_at,
                e.visible_in,
            )
            for e in episodes
        ]
        db = conn or self._pool
        before = await db.fetchval(
            "SELECT count(*) FROM episodes WHERE message_id = ANY($1::bigint[])", [e.message_id for e in episodes]
        )
        await db.executemany(
            """INSERT INTO episodes (scope, channel_id, author_id, message_id, reply_message_id, content,
                                     embedding, surprise, novelty, salience, pinned, created_at,
                                     last_reinforced_at, visible_in)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13)
               ON CONFLICT (message_id) DO NOTHING""",
            rows,
        )
        return len(episodes) - before

    async def search(
        self, scope: str, vector: np.ndarray, k: int, *, visible_channel: str | None = None
    ) -> list[EpisodeHit]:
        """The ``k`` nearest episodes this audience may see, best first (similarity on the (1 + cos) / 2 scale).

        The audience is the scope and, inside it, ``visible_channel``: episodes
        of restricted channels are seen only there (None: public ones only).
        """
        require_scope(scope)
        if k <= 0:
            return []
        inner = """SELECT {cols}, embedding <=> $2 AS distance FROM episodes
                   WHERE scope = $1 AND (visible_in IS NULL OR visible_in = $4::text)
                   ORDER BY {order} LIMIT $3"""
        query = """SELECT e.*, 1 - e.distance / 2 AS similarity,
                          m.external_id AS m_external, m.channel_id AS m_channel, m.source AS m_source, m.author_id AS m_author, m.channel_name AS m_channel_name,
                          r.external_id AS r_external, r.channel_id AS r_channel, r.source AS r_source
                   FROM ({inner}) e
                   LEFT JOIN messages m ON m.id = e.message_id
                   LEFT JOIN messages r ON r.id = e.reply_message_id"""
        key = np.asarray(vector, dtype=np.float32)
        # Ordering by an expression the vector index cannot serve makes the planner scan the audience's rows.
        exact = query.format(inner=inner.format(cols=_COLUMNS, order="(embedding <=> $2) + 0"))
        indexed = query.format(inner=inner.format(cols=_COLUMNS, order="embedding <=> $2"))
        async with self._pool.acquire() as conn:
            if await self._exact_is_cheaper(conn, scope, visible_channel):
                rows = await conn.fetch(exact, scope, key, k, visible_channel)
            else:
                if await self._iterative(conn):
                    # The scan goes on past its first ef_search candidates until it has k rows: one round trip,
                    # not four (BEGIN, SET LOCAL, the query, COMMIT) for a larger first list.
                    rows = await conn.fetch(indexed, scope, key, k, visible_channel)
                else:
                    async with conn.transaction():
                        await conn.execute(f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH_POST_FILTER, k)}")
                        rows = await conn.fetch(indexed, scope, key, k, visible_channel)
                if len(rows) < k:
                    # Past hnsw.max_scan_tuples (or without iterative scans) a filtered scan can come back
                    # short: scan the audience exactly (it may just hold fewer than k).
                    rows = await conn.fetch(exact, scope, key, k, visible_channel)
        hits = [EpisodeHit(_episode(r), float(r["similarity"]), _sources(r)) for r in rows]
        hits.sort(key=lambda h: h.similarity, reverse=True)  # the contract: best first
        return hits

    async def search_between(
        self,
        scope: str,
        vector: np.ndarray,
        k: int,
        start: datetime,
        end: datetime,
        *,
        visible_channel: str | None = None,
    ) -> list[EpisodeHit]:
        """The ``k`` episodes of [start, end) nearest ``vector`` that the audience may see (an exact scan of
        that stretch), best first."""
        require_scope(scope)
        if k <= 0:
            return []
        rows = await self._pool.fetch(
            f"""SELECT e.*, 1 - e.distance / 2 AS similarity,
                       m.external_id AS m_external, m.channel_id AS m_channel, m.source AS m_source, m.author_id AS m_author, m.channel_name AS m_channel_name,
                       r.external_id AS r_external, r.channel_id AS r_channel, r.source AS r_source
                FROM (SELECT {_COLUMNS}, embedding <=> $2 AS distance FROM episodes
                      WHERE scope = $1 AND created_at >= $4 AND created_at < $5
                        AND (visible_in IS NULL OR visible_in = $6::text)
                      ORDER BY (embedding <=> $2) + 0 LIMIT $3) e
                LEFT JOIN messages m ON m.id = e.message_id
                LEFT JOIN messages r ON r.id = e.reply_message_id
                ORDER BY e.distance""",
            scope,
            np.asarray(vector, dtype=np.float32),
            k,
            start,
            end,
            visible_channel,
        )
        return [EpisodeHit(_episode(r), float(r["similarity"]), _sources(r)) for r in rows]

    async def search_by_authors(
        self,
        scope: str,
        vector: np.ndarray,
        k: int,
        author_ids: Sequence[str],
        *,
        visible_channel: str | None = None,
        min_words: int = 0,
    ) -> list[EpisodeHit]:
        """The ``k`` episodes these people said that are nearest ``vector`` (an exact scan of their episodes)."""
        require_scope(scope)
        if k <= 0 or not author_ids:
            return []
        rows = await self._pool.fetch(
            f"""SELECT e.*, 1 - e.distance / 2 AS similarity,
                       m.external_id AS m_external, m.channel_id AS m_channel, m.source AS m_source, m.author_id AS m_author, m.channel_name AS m_channel_name,
                       r.external_id AS r_external, r.channel_id AS r_channel, r.source AS r_source
                FROM (SELECT {_COLUMNS}, embedding <=> $2 AS distance FROM episodes
                      WHERE scope = $1 AND author_id = ANY($4::text[])
                        AND (visible_in IS NULL OR visible_in = $5::text)
                        AND array_length(regexp_split_to_array(split_part(content, chr(10), 1), '[[:space:]]+'), 1) > $6
                      ORDER BY (embedding <=> $2) + 0 LIMIT $3) e
                LEFT JOIN messages m ON m.id = e.message_id
                LEFT JOIN messages r ON r.id = e.reply_message_id
                ORDER BY e.distance""",
            scope,
            np.asarray(vector, dtype=np.float32),
            k,
            list(author_ids),
            visible_channel,
            min_words,
        )
        return [EpisodeHit(_episode(r), float(r["similarity"]), _sources(r)) for r in rows]

    async def speakers(self, scope: str) -> dict[str, str]:
        """Who has spoken in the scope: author id -> name (people only)."""
        require_scope(scope)
        rows = await self._pool.fetch(
            "SELECT DISTINCT ON (author_id) author_id, author_name FROM messages WHERE scope = $1 AND NOT is_bot "
            "ORDER BY author_id, created_at DESC",
            scope,
        )
        return {r["author_id"]: r["author_name"] for r in rows}

    async def any_between(
        self, scope: str, start: datetime, end: datetime, *, visible_channel: str | None = None
    ) -> bool:
        return bool(
            await self._pool.fetchval(
                """SELECT EXISTS (SELECT 1 FROM episodes WHERE scope = $1 AND created_at >= $2 AND created_at < $3
                              AND (visible_in IS NULL OR visible_in = $4::text))""",
                scope,
                start,
                end,
                visible_channel,
            )
        )

    async def for_messages(
        self, scope: str, message_ids: Sequence[int], vector: np.ndarray, *, visible_channel: str | None = None
    ) -> dict[int, EpisodeHit]:
        """The audience's episodes of these messages (by the message that opened them), with their similarity
        to ``vector``: a lexical hit's episode, scored on the same scale as the dense ones."""
        require_scope(scope)
        if not message_ids:
            return {}
        rows = await self._pool.fetch(
            f"""SELECT e.*, 1 - e.distance / 2 AS similarity,
                       m.external_id AS m_external, m.channel_id AS m_channel, m.source AS m_source, m.author_id AS m_author, m.channel_name AS m_channel_name,
                       r.external_id AS r_external, r.channel_id AS r_channel, r.source AS r_source
                FROM (SELECT {_COLUMNS}, embedding <=> $3 AS distance FROM episodes
                      WHERE scope = $1 AND (message_id = ANY($2::bigint[]) OR reply_message_id = ANY($2::bigint[]))
                        AND (visible_in IS NULL OR visible_in = $4::text)) e
                LEFT JOIN messages m ON m.id = e.message_id
                LEFT JOIN messages r ON r.id = e.reply_message_id""",
            scope,
            list(message_ids),
            np.asarray(vector, dtype=np.float32),
            visible_channel,
        )
        hits = {}
        for r in rows:
            hit = EpisodeHit(_episode(r), float(r["similarity"]), _sources(r))
            hits[r["message_id"]] = hit
            if r["reply_message_id"] is not None:
                hits.setdefault(r["reply_message_id"], hit)
        return hits

    async def mark_recalled(
        self, scope: str, episode_ids: Sequence[int], at: datetime, conn: asyncpg.Connection | None = None
    ) -> None:
        require_scope(scope)
        if episode_ids:
            await (conn or self._pool).execute(
                """UPDATE episodes SET recall_count = recall_count + 1, last_recalled_at = $3,
                       last_reinforced_at = GREATEST(last_reinforced_at, $3)
                   WHERE scope = $1 AND id = ANY($2::bigint[])""",
                scope,
                list(episode_ids),
                at,
            )

    async def pin(self, scope: str, message_id: int, now: datetime, pinned: bool = True) -> int:
        """Pin (or unpin) the episode of a message at ``now`` (which reinforces it): pinned memories never decay.
        Returns rows changed."""
        require_scope(scope)
        status = await self._pool.execute(
            """UPDATE episodes SET pinned = $3, last_reinforced_at = GREATEST(last_reinforced_at, $4)
               WHERE scope = $1 AND (message_id = $2 OR reply_message_id = $2)""",
            scope,
            message_id,
            pinned,
            now,
        )
        return int(status.split()[-1])

    async def update_source(
        self, scope: str, message_id: int, content: str, embedding: np.ndarray, conn: asyncpg.Connection | None = None
    ) -> int:
        """After an edit of the message an episode came from: new text, new key."""
        require_scope(scope)
        status = await (conn or self._pool).execute(
            "UPDATE episodes SET content = $3, embedding = $4 WHERE scope = $1 AND message_id = $2",
            scope,
            message_id,
            content,
            np.asarray(embedding, dtype=np.float32),
        )
        return int(status.split()[-1])

    async def by_author(
        self, scope: str, author_id: str, limit: int = 50, *, visible_channel: str | None = None
    ) -> list[Episode]:
        """This person's latest episodes that the audience may see (``visible_channel`` None: public ones)."""
        require_scope(scope)
        rows = await self._pool.fetch(
            f"""SELECT {_COLUMNS} FROM episodes WHERE scope = $1 AND author_id = $2
                AND (visible_in IS NULL OR visible_in = $4::text) ORDER BY created_at DESC LIMIT $3""",
            scope,
            author_id,
            limit,
            visible_channel,
        )
        return [_episode(r) for r in rows]

    async def count(self, scope: str) -> int:
        require_scope(scope)
        return await self._pool.fetchval("SELECT count(*) FROM episodes WHERE scope = $1", scope)

    async def count_of(self, scope: str, message_ids: Sequence[int]) -> int:
        """How many of ``message_ids`` (this scope's) are the source of an episode."""
        require_scope(scope)
        return await self._pool.fetchval(
            "SELECT count(*) FROM episodes WHERE scope = $1 AND message_id = ANY($2::bigint[])",
            scope,
            list(message_ids),
        )
