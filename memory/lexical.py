"""Lexical search over the raw message log: PostgreSQL full text, ranked by BM25.

The log keeps every message (sql/008_lexical.sql indexes the speaker's name
with the text), so what the write gate declined is still findable by its
words. A question's words are OR-ed (a question rarely repeats every word of
its answer), candidates come from the GIN index within the scope and the
audience, and are ranked by Okapi BM25 with the scope's document
frequencies, which ``ts_rank`` lacks: in a long conversation the speakers'
names occur everywhere and must weigh little.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from memory.conversation import StoredMessage, require_scope

BM25_K1 = 1.2
BM25_B = 0.75
CANDIDATES = 400  # per query, by ts_rank before BM25 re-ranks them

_MESSAGE_COLUMNS = ("id, scope, source, external_id, channel_id, author_id, author_name, is_bot, content, "
                    "derived_from_id, created_at, visible_in, thread_parent_id")
_AUDIENCE = "scope = $1 AND (visible_in IS NULL OR visible_in = $2::text)"


@dataclass(frozen=True)
class LexicalHit:
    message: StoredMessage
    score: float  # BM25


@dataclass(frozen=True)
class _Stats:
    """An audience's document frequencies, for IDF (stale by a minute at most: ranking tolerates it)."""

    n_docs: int
    avg_len: float
    df: dict[str, int]
    at: float


class LexicalSearch:
    def __init__(self, pool: asyncpg.Pool, *, stats_ttl_s: float = 60.0) -> None:
        self._pool = pool
        self._ttl = stats_ttl_s
        self._stats: dict[tuple[str, str | None], _Stats] = {}
        self._no_cache_until = 0.0

    def forget_cached(self, *, for_s: float = 10.0) -> None:
        """Drop the cached document frequencies (they count the words of messages being forgotten), and
        cache none for ``for_s`` seconds, so statistics read before the forgetting commits are not kept."""
        self._stats.clear()
        self._no_cache_until = time.monotonic() + for_s

    async def search(self, scope: str, text: str, k: int, *, visible_channel: str | None = None,
                     exclude_ids: Sequence[int] = ()) -> list[LexicalHit]:
        """The ``k`` messages of the audience that best match ``text``'s words, best first."""
        require_scope(scope)
        if k <= 0 or not text.strip():
            return []
        async with self._pool.acquire() as conn:
            terms = [t for t in await conn.fetchval(
                "SELECT coalesce(array_agg(DISTINCT lexeme), '{}') FROM unnest(to_tsvector('english', $1))", text)
                if "'" not in t and "\\" not in t]
            if not terms:
                return []
            query = " | ".join(f"'{t}'" for t in terms)  # lexemes already normalised: cast, do not re-stem
            rows = await conn.fetch(
                f"""SELECT {_MESSAGE_COLUMNS}, search_tsv::text AS tsv
                    FROM messages
                    WHERE {_AUDIENCE} AND search_tsv @@ $3::tsquery AND NOT id = ANY($5::bigint[])
                    ORDER BY ts_rank(search_tsv, $3::tsquery) DESC LIMIT $4""",
                scope, visible_channel, query, CANDIDATES, list(exclude_ids))
            if not rows:
                return []
            stats = await self._audience_stats(conn, scope, visible_channel)
        idf = {t: math.log(1 + (stats.n_docs - stats.df.get(t, 0) + 0.5) / (stats.df.get(t, 0) + 0.5))
               for t in terms}
        hits = []
        for r in rows:
            tf = _term_frequencies(r["tsv"])
            length = len(tf) or 1  # distinct lexemes, as avg_len counts them
            score = 0.0
            for t in terms:
                if f := tf.get(t, 0):
                    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / stats.avg_len)
                    score += idf[t] * f * (BM25_K1 + 1) / (f + norm)
            message = StoredMessage(**{c: r[c] for c in _MESSAGE_COLUMNS.split(", ")})
            hits.append(LexicalHit(message, score))
        hits.sort(key=lambda h: (-h.score, h.message.id))
        return hits[:k]

    async def _audience_stats(self, conn: asyncpg.Connection, scope: str, visible_channel: str | None) -> _Stats:
        key = (scope, visible_channel)
        cached = self._stats.get(key)
        if cached is not None and time.monotonic() - cached.at < self._ttl:
            return cached
        audience = await conn.fetchval(
            "SELECT format('SELECT search_tsv FROM messages WHERE scope = %L AND (visible_in IS NULL OR "
            "visible_in = %L)', $1::text, $2::text)", scope, visible_channel)
        df = {r["word"]: r["ndoc"] for r in await conn.fetch("SELECT word, ndoc FROM ts_stat($1)", audience)}
        row = await conn.fetchrow(
            f"SELECT count(*) AS n, avg(length(search_tsv)) AS avg_len FROM messages WHERE {_AUDIENCE}",
            scope, visible_channel)
        stats = _Stats(row["n"], float(row["avg_len"] or 1.0), df, time.monotonic())
        if stats.at >= self._no_cache_until:
            self._stats[key] = stats
        return stats


def _term_frequencies(tsv: str) -> dict[str, int]:
    """'cat':3,9 'miso':4  ->  {'cat': 2, 'miso': 1} (a tsvector's text form: lexeme and positions)."""
    counts: dict[str, int] = {}
    for part in tsv.split(" '"):
        lexeme, _, positions = part.strip().strip("'").rpartition("':")
        if not lexeme:  # a lexeme without positions cannot occur in a to_tsvector result
            continue
        counts[lexeme] = positions.count(",") + 1
    return counts


async def neighbours(db: asyncpg.Pool | asyncpg.Connection, scope: str, message_ids: Sequence[int], n: int, *,
                     visible_channel: str | None = None, after: int | None = None) -> dict[int, list[StoredMessage]]:
    """Each message's conversation around it: up to ``n`` messages of its channel before it and ``after``
    (default ``n``) after it that the audience may see, oldest first (the message itself included)."""
    require_scope(scope)
    after = n if after is None else after
    if (n <= 0 and after <= 0) or not message_ids:
        return {}
    cols = ", ".join(f"x.{c}" for c in _MESSAGE_COLUMNS.split(", "))
    rows = await db.fetch(
        f"""SELECT a.id AS anchor, {cols} FROM messages a
            CROSS JOIN LATERAL (
                (SELECT * FROM messages b WHERE b.scope = a.scope AND b.channel_id = a.channel_id
                   AND (b.created_at, b.id) < (a.created_at, a.id)
                   AND (b.visible_in IS NULL OR b.visible_in = $3::text)
                 ORDER BY b.created_at DESC, b.id DESC LIMIT $4)
                UNION ALL SELECT * FROM messages c WHERE c.id = a.id
                UNION ALL
                (SELECT * FROM messages d WHERE d.scope = a.scope AND d.channel_id = a.channel_id
                   AND (d.created_at, d.id) > (a.created_at, a.id)
                   AND (d.visible_in IS NULL OR d.visible_in = $3::text)
                 ORDER BY d.created_at, d.id LIMIT $5)) x
            WHERE a.scope = $1 AND a.id = ANY($2::bigint[])
            ORDER BY a.id, x.created_at, x.id""",
        scope, list(message_ids), visible_channel, max(n, 0), max(after, 0))
    out: dict[int, list[StoredMessage]] = {}
    for r in rows:
        out.setdefault(r["anchor"], []).append(StoredMessage(**{c: r[c] for c in _MESSAGE_COLUMNS.split(", ")}))
    return out
