"""Lexical search over the raw message log: PostgreSQL full text, ranked by BM25.

The log keeps every message (sql/008_lexical.sql indexes the speaker's name
with the text), so what the write gate declined is still findable by its
words. A question's words are OR-ed (a question rarely repeats every word of
its answer), candidates come from the GIN index within the scope and the
audience, and are ranked by Okapi BM25 with the scope's document
frequencies, which ``ts_rank`` lacks: in a long conversation the speakers'
names occur everywhere and must weigh little.

At scale a common word matches tens of thousands of messages, and ranking
every match is what made lexical search the slowest part of recall at 100,000
messages. So the candidate query ORs the question's rarest words only, adding
words rarest first until they match about ``MATCH_BUDGET`` messages (at least
one word always), and the words left out still count in the BM25 score of the
candidates. A store smaller than the budget is searched exactly as before.
BM25 is computed in the server (one query: the candidates, their scores, the
k best rows), so only the k best messages travel.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from memory.conversation import StoredMessage, require_scope

BM25_K1 = 1.2
BM25_B = 0.75
CANDIDATES = 400  # per query, by ts_rank before BM25 re-ranks them
MATCH_BUDGET = 2000  # messages the candidate query's words may match, by document frequency (bench/README.md)

log = logging.getLogger(__name__)

_MESSAGE_COLUMNS = (
    "id, scope, source, external_id, channel_id, author_id, author_name, is_bot, content, "
    "derived_from_id, created_at, visible_in, thread_parent_id"
)
_COLUMN_NAMES = _MESSAGE_COLUMNS.split(", ")
_AUDIENCE = "scope = $1 AND (visible_in IS NULL OR visible_in = $2::text)"
# The candidates by ts_rank, then Okapi BM25 of each: for every query word ($6, its IDF in $7) a candidate
# holds, tf is the number of its positions. Ranked in the server, so only the k best rows travel (at 100,000
# messages, 400 candidates with their tsvectors took 21 ms to arrive for a query the server ran in 9, and
# scoring them in Python 8 ms more).
_RANKED = f"""
    WITH candidates AS (
        SELECT id, search_tsv, greatest(length(search_tsv), 1) AS n_lexemes FROM messages
        WHERE {_AUDIENCE} AND search_tsv @@ $3::tsquery AND NOT id = ANY($5::bigint[]) AND NOT is_bot
        ORDER BY ts_rank(search_tsv, $3::tsquery) DESC LIMIT $4),
    scored AS (
        SELECT c.id, sum(w.idf * f.tf * ($8::float8 + 1)
                          / (f.tf + $8::float8 * (1 - $9::float8 + $9::float8 * c.n_lexemes / $10::float8))) AS score
        FROM candidates c
        CROSS JOIN LATERAL (SELECT lexeme, coalesce(array_length(positions, 1), 0)::float8 AS tf
                            FROM unnest(c.search_tsv)) f
        JOIN unnest($6::text[], $7::float8[]) AS w(term, idf) ON w.term = f.lexeme
        GROUP BY c.id)
    SELECT {", ".join("m." + c for c in _COLUMN_NAMES)}, s.score
    FROM scored s JOIN messages m ON m.id = s.id
    ORDER BY s.score DESC, s.id LIMIT $11"""


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
    def __init__(self, pool: asyncpg.Pool, *, stats_ttl_s: float = 60.0, match_budget: int = MATCH_BUDGET) -> None:
        self._pool = pool
        self.match_budget = match_budget
        self._ttl = stats_ttl_s
        self._stats: dict[tuple[str, str | None], _Stats] = {}
        self._refreshing: dict[tuple[str, str | None], asyncio.Task] = {}
        self._no_cache_until = 0.0

    async def close(self) -> None:
        """Cancel the recounts in flight (before the pool they use closes)."""
        tasks = list(self._refreshing.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def forget_cached(self, *, for_s: float = 10.0) -> None:
        """Drop the cached document frequencies (they count the words of messages being forgotten), and
        cache none for ``for_s`` seconds, so statistics read before the forgetting commits are not kept."""
        self._stats.clear()
        self._no_cache_until = time.monotonic() + for_s

    async def search(
        self, scope: str, text: str, k: int, *, visible_channel: str | None = None, exclude_ids: Sequence[int] = ()
    ) -> list[LexicalHit]:
        """The ``k`` people's messages of the audience that best match ``text``'s words, best first (never a
        bot's: its replies stay in the log and the recent turns, but are not recalled as what people said)."""
        require_scope(scope)
        if k <= 0 or not text.strip():
            return []
        async with self._pool.acquire() as conn:
            terms = [
                t
                for t in await conn.fetchval(
                    "SELECT coalesce(array_agg(DISTINCT lexeme), '{}') FROM unnest(to_tsvector('english', $1))", text
                )
                if "'" not in t and "\\" not in t
            ]
            if not terms:
                return []
            stats = await self._audience_stats(conn, scope, visible_channel)
            # lexemes already normalised: cast, do not re-stem
            query = " | ".join(f"'{t}'" for t in candidate_terms(terms, stats.df, self.match_budget))
            idf = {
                t: math.log(1 + (stats.n_docs - stats.df.get(t, 0) + 0.5) / (stats.df.get(t, 0) + 0.5)) for t in terms
            }
            rows = await conn.fetch(
                _RANKED,
                scope,
                visible_channel,
                query,
                CANDIDATES,
                list(exclude_ids),
                list(idf),
                list(idf.values()),
                BM25_K1,
                BM25_B,
                stats.avg_len,
                k,
            )
        return [LexicalHit(StoredMessage(**{c: r[c] for c in _COLUMN_NAMES}), float(r["score"])) for r in rows]

    async def _audience_stats(self, conn: asyncpg.Connection, scope: str, visible_channel: str | None) -> _Stats:
        """Cached for ``stats_ttl_s``; an expired entry is still used while a background task recounts it
        (counting every word of a large audience takes longer than a whole recall should)."""
        key = (scope, visible_channel)
        cached = self._stats.get(key)
        if cached is None:
            return await self._count(conn, scope, visible_channel)
        if time.monotonic() - cached.at >= self._ttl and key not in self._refreshing:
            self._refreshing[key] = asyncio.create_task(self._refresh(key))
        return cached

    async def _refresh(self, key: tuple[str, str | None]) -> None:
        try:
            async with self._pool.acquire() as conn:
                await self._count(conn, *key)
        except Exception:  # the stale statistics stay in use; the next search tries again
            log.warning("recounting word statistics of %s failed", key, exc_info=True)
        finally:
            self._refreshing.pop(key, None)

    async def _count(self, conn: asyncpg.Connection, scope: str, visible_channel: str | None) -> _Stats:
        key = (scope, visible_channel)
        audience = await conn.fetchval(
            "SELECT format('SELECT search_tsv FROM messages WHERE scope = %L AND (visible_in IS NULL OR "
            "visible_in = %L)', $1::text, $2::text)",
            scope,
            visible_channel,
        )
        df = {r["word"]: r["ndoc"] for r in await conn.fetch("SELECT word, ndoc FROM ts_stat($1)", audience)}
        row = await conn.fetchrow(
            f"SELECT count(*) AS n, avg(length(search_tsv)) AS avg_len FROM messages WHERE {_AUDIENCE}",
            scope,
            visible_channel,
        )
        stats = _Stats(row["n"], float(row["avg_len"] or 1.0), df, time.monotonic())
        if stats.at >= self._no_cache_until:
            self._stats[key] = stats
        return stats


def candidate_terms(terms: Sequence[str], df: dict[str, int], budget: int = MATCH_BUDGET) -> list[str]:
    """The words whose matches make the candidate set: rarest first, while their document frequencies sum
    to at most ``budget`` (the rarest word always). All of them when they fit."""
    if sum(df.get(t, 0) for t in terms) <= budget:
        return list(terms)
    chosen: list[str] = []
    matched = 0
    for t in sorted(terms, key=lambda t: (df.get(t, 0), t)):
        if chosen and matched + df.get(t, 0) > budget:
            break
        chosen.append(t)
        matched += df.get(t, 0)
    return chosen


async def neighbours(
    db: asyncpg.Pool | asyncpg.Connection,
    scope: str,
    message_ids: Sequence[int],
    n: int,
    *,
    visible_channel: str | None = None,
    after: int | None = None,
) -> dict[int, list[StoredMessage]]:
    """Each message's conversation around it: up to ``n`` messages of its channel before it and ``after``
    (default ``n``) after it that the audience may see, oldest first (the message itself included, also when
    ``n`` and ``after`` are 0). Bots'
    messages (this bot's replies included) are never among them: what a bot said is not what people said."""
    require_scope(scope)
    after = n if after is None else after
    if not message_ids:
        return {}
    cols = ", ".join(f"x.{c}" for c in _MESSAGE_COLUMNS.split(", "))
    rows = await db.fetch(
        f"""SELECT a.id AS anchor, {cols} FROM messages a
            CROSS JOIN LATERAL (
                (SELECT * FROM messages b WHERE b.scope = a.scope AND b.channel_id = a.channel_id
                   AND (b.created_at, b.id) < (a.created_at, a.id)
                   AND (b.visible_in IS NULL OR b.visible_in = $3::text) AND NOT b.is_bot
                 ORDER BY b.created_at DESC, b.id DESC LIMIT $4)
                UNION ALL SELECT * FROM messages c WHERE c.id = a.id
                UNION ALL
                (SELECT * FROM messages d WHERE d.scope = a.scope AND d.channel_id = a.channel_id
                   AND (d.created_at, d.id) > (a.created_at, a.id)
                   AND (d.visible_in IS NULL OR d.visible_in = $3::text) AND NOT d.is_bot
                 ORDER BY d.created_at, d.id LIMIT $5)) x
            WHERE a.scope = $1 AND a.id = ANY($2::bigint[])
            ORDER BY a.id, x.created_at, x.id""",
        scope,
        list(message_ids),
        visible_channel,
        max(n, 0),
        max(after, 0),
    )
    out: dict[int, list[StoredMessage]] = {}
    for r in rows:
        out.setdefault(r["anchor"], []).append(StoredMessage(**{c: r[c] for c in _MESSAGE_COLUMNS.split(", ")}))
    return out
