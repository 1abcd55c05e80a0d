"""Moments (seed 000, "ragbrain"): every bot reply with its metrics, and a quality people teach.

A moment is one turn: the person's message, the bot's reply, how the
generation felt (mean surprise and token entropy), the message's novelty and
arousal, the archetype and themes, the reply's length and word variety, and
a quality in [0, 1]. Quality is ``(1 + ups) / (2 + ups + downs)`` over the
signals people gave (reactions, replies, carrying on, a deleted reply,
``/good`` and ``/bad``), so it starts at 0.5 and every signal can be taken
back. Values are clamped and NaN becomes 0; the layer catches every error,
so a write never breaks a reply.

``query_similar`` finds past moments by internal state (cosine over the
metric vector) and ``summary_for_state`` aggregates them, as ragbrain's
``get_summary_for_state`` does. Every read takes the audience.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import asyncpg

from memory.resonance.features import clamp
from memory.resonance.scoring import Candidate

log = logging.getLogger(__name__)

CANDIDATES = 512  # the scope's most recent moments that resonant recall scores
SIMILAR_WINDOW = 2000  # moments that query_similar compares (the most recent)
SURPRISE_SCALE = 10.0  # nats: surprise and entropy are divided by this into [0, 1] for the metric vector

# What each signal is worth (up > 0, down < 0).
UP_REACTIONS = {"👍": 1.0, "❤️": 1.0, "❤": 1.0, "😂": 1.0, "🔥": 1.0, "🙏": 0.5, "😄": 0.5}
DOWN_REACTIONS = {"👎": -1.0, "😕": -0.5}
REPLY_WEIGHT = 1.0  # someone answered the reply itself
CARRY_ON_WEIGHT = 0.5  # the person went on talking after it
DELETED_WEIGHT = -3.0  # the reply was deleted
RATING_WEIGHT = 2.0  # /good, /bad


@dataclass(frozen=True)
class Metrics:
    """A moment's internal state, each in [0, 1] (surprise and entropy are divided by 10 nats)."""

    surprise: float = 0.0
    entropy: float = 0.0
    novelty: float = 0.0
    arousal: float = 0.0
    reply_len_norm: float = 0.0
    unique_ratio: float = 0.0

    def vector(self) -> list[float]:
        return [
            clamp(self.surprise),
            clamp(self.entropy),
            clamp(self.novelty),
            clamp(self.arousal),
            clamp(self.reply_len_norm),
            clamp(self.unique_ratio),
        ]


@dataclass(frozen=True)
class NewMoment:
    message_id: int
    reply_id: int
    scope: str
    visible_in: str | None
    channel_id: str
    words: Sequence[str]
    themes: Sequence[str]
    archetype: str | None
    surprise: float | None
    entropy: float | None
    novelty: float
    arousal: float
    reply_len_norm: float
    unique_ratio: float
    created_at: datetime


@dataclass(frozen=True)
class Recalled:
    """A winning moment with the reply's text, read now (so an edit or a delete wins)."""

    id: int
    message_id: int
    reply_id: int
    text: str
    quality: float
    created_at: datetime


@dataclass(frozen=True)
class Similar:
    """A moment near a state (ragbrain's query_similar row)."""

    moment_id: int
    created_at: datetime
    quality: float
    distance: float
    metrics: Metrics
    reply: str  # '' when the reply was deleted
    message_id: int


@dataclass(frozen=True)
class Summary:
    count: int = 0
    avg_quality: float = 0.0
    max_quality: float = 0.0
    mean_distance: float = 0.0


@dataclass(frozen=True)
class Stats:
    """A scope's moments for ``/memory stats``: how many, and how their quality is spread."""

    moments: int = 0
    rated: int = 0  # with at least one signal
    mean_quality: float = 0.0
    buckets: tuple[int, ...] = field(default=(0, 0, 0, 0, 0))  # quality in [0, .2), [.2, .4), ... [.8, 1]

    def render(self) -> str:
        if not self.moments:
            return "moments: 0"
        spread = " ".join(f"{n}" for n in self.buckets)
        return (
            f"moments: {self.moments} ({self.rated} rated), mean quality {self.mean_quality:.2f}, "
            f"quality 0-.2/.2-.4/.4-.6/.6-.8/.8-1: {spread}"
        )


def metrics_of(
    surprise: float | None,
    entropy: float | None,
    novelty: float,
    arousal: float,
    reply_len_norm: float,
    unique_ratio: float,
) -> Metrics:
    return Metrics(
        clamp((surprise or 0.0) / SURPRISE_SCALE),
        clamp((entropy or 0.0) / SURPRISE_SCALE),
        clamp(novelty),
        clamp(arousal),
        clamp(reply_len_norm),
        clamp(unique_ratio),
    )


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return 1.0
    return 1.0 - dot / (na * nb)


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


_RECOMPUTE = """
UPDATE resonance_moments m
   SET ups = s.ups, downs = s.downs, quality = (1 + s.ups) / (2 + s.ups + s.downs)
  FROM (SELECT COALESCE(sum(GREATEST(weight, 0)), 0) AS ups, COALESCE(sum(GREATEST(-weight, 0)), 0) AS downs
          FROM resonance_signals WHERE moment_id = $1) s
 WHERE m.id = $1
RETURNING m.quality
"""


class MomentStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    # --- writing -------------------------------------------------------------------------------------------

    async def add(self, m: NewMoment, conn: asyncpg.Connection | None = None) -> tuple[int, bool]:
        """Store a moment (again: the same message updates it, keeping its quality and uses); its id, and
        whether it is new."""
        row = await (conn or self.pool).fetchrow(
            """INSERT INTO resonance_moments (message_id, reply_id, scope, visible_in, channel_id, words, themes,
                   archetype, surprise, entropy, novelty, arousal, reply_len_norm, unique_ratio, created_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
               ON CONFLICT (message_id) DO UPDATE SET
                   reply_id = EXCLUDED.reply_id, words = EXCLUDED.words, themes = EXCLUDED.themes,
                   archetype = EXCLUDED.archetype,
                   surprise = COALESCE(EXCLUDED.surprise, resonance_moments.surprise),
                   entropy = COALESCE(EXCLUDED.entropy, resonance_moments.entropy),
                   novelty = EXCLUDED.novelty, arousal = EXCLUDED.arousal,
                   reply_len_norm = EXCLUDED.reply_len_norm, unique_ratio = EXCLUDED.unique_ratio
               RETURNING id, (xmax = 0) AS inserted""",
            m.message_id,
            m.reply_id,
            m.scope,
            m.visible_in,
            m.channel_id,
            list(m.words),
            list(m.themes),
            m.archetype,
            _finite(m.surprise),
            _finite(m.entropy),
            clamp(m.novelty),
            clamp(m.arousal),
            clamp(m.reply_len_norm),
            clamp(m.unique_ratio),
            m.created_at,
        )
        return row["id"], row["inserted"]

    async def set_message_features(
        self, message_id: int, themes: Sequence[str], arousal: float, conn: asyncpg.Connection | None = None
    ) -> None:
        """The person's message was edited: its themes and arousal follow."""
        await (conn or self.pool).execute(
            "UPDATE resonance_moments SET themes = $2, arousal = $3 WHERE message_id = $1",
            message_id,
            list(themes),
            clamp(arousal),
        )

    async def mark_used(self, scope: str, ids: Sequence[int], now: datetime) -> None:
        if ids:
            await self.pool.execute(
                """UPDATE resonance_moments SET uses = uses + 1, last_used_at = $3
                   WHERE scope = $1 AND id = ANY($2::bigint[])""",
                scope,
                list(ids),
                now,
            )

    # --- signals -------------------------------------------------------------------------------------------

    async def signal(
        self,
        moment_id: int,
        kind: str,
        weight: float,
        now: datetime,
        *,
        actor_id: str | None = None,
        detail: str = "",
        message_id: int | None = None,
        conn: asyncpg.Connection | None = None,
    ) -> float | None:
        """Record (or replace) one signal and return the moment's new quality (None: no such moment)."""
        weight = clamp(weight, -5.0, 5.0) if math.isfinite(weight) else 0.0
        if conn is None:
            async with self.pool.acquire() as c, c.transaction():
                return await self.signal(
                    moment_id, kind, weight, now, actor_id=actor_id, detail=detail, message_id=message_id, conn=c
                )
        await conn.execute(
            """INSERT INTO resonance_signals (moment_id, kind, actor_id, detail, weight, message_id, created_at)
               SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM resonance_moments WHERE id = $1)
               ON CONFLICT (moment_id, kind, actor_id, detail) DO UPDATE SET
                   weight = EXCLUDED.weight, message_id = EXCLUDED.message_id, created_at = EXCLUDED.created_at""",
            moment_id,
            kind,
            actor_id,
            detail,
            weight,
            message_id,
            now,
        )
        return await conn.fetchval(_RECOMPUTE, moment_id)

    async def retract(self, moment_id: int, kind: str, *, actor_id: str | None, detail: str = "") -> float | None:
        """Take a signal back (a reaction removed); the moment's new quality."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                """DELETE FROM resonance_signals
                   WHERE moment_id = $1 AND kind = $2 AND actor_id IS NOT DISTINCT FROM $3 AND detail = $4""",
                moment_id,
                kind,
                actor_id,
                detail,
            )
            return await conn.fetchval(_RECOMPUTE, moment_id)

    # --- finding moments -------------------------------------------------------------------------------------

    async def for_transport_reply(self, source: str, channel_id: str, external_id: str) -> tuple[int, str] | None:
        """The moment of a bot reply known by its transport ids (a Discord message), with its scope."""
        row = await self.pool.fetchrow(
            """SELECT r.id, r.scope FROM messages m JOIN resonance_moments r ON r.reply_id = m.id
               WHERE m.source = $1 AND m.channel_id = $2 AND m.external_id = $3 AND m.is_bot""",
            source,
            channel_id,
            external_id,
        )
        return (row["id"], row["scope"]) if row else None

    async def last_in_channel(self, scope: str, channel_id: str) -> tuple[int, str] | None:
        """The latest moment of a conversation that still has its reply: (id, the reply's text)."""
        row = await self.pool.fetchrow(
            """SELECT r.id, m.content FROM resonance_moments r JOIN messages m ON m.id = r.reply_id
               WHERE r.scope = $1 AND r.channel_id = $2 ORDER BY r.created_at DESC, r.id DESC LIMIT 1""",
            scope,
            channel_id,
        )
        return (row["id"], row["content"]) if row else None

    async def previous_for(
        self, scope: str, channel_id: str, author_id: str, before_id: int, since: datetime
    ) -> int | None:
        """The moment of the bot's last reply to ``author_id`` in a conversation, made before message
        ``before_id`` and after ``since`` (the person carrying on after it)."""
        return await self.pool.fetchval(
            """SELECT r.id FROM resonance_moments r JOIN messages p ON p.id = r.message_id
               WHERE r.scope = $1 AND r.channel_id = $2 AND p.author_id = $3 AND r.message_id < $4
                 AND r.reply_id IS NOT NULL AND r.created_at >= $5
               ORDER BY r.message_id DESC LIMIT 1""",
            scope,
            channel_id,
            author_id,
            before_id,
            since,
        )

    async def candidates(
        self,
        scope: str,
        visible_channel: str | None,
        limit: int = CANDIDATES,
        *,
        sharing: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> list[Candidate]:
        """The scope's last ``limit`` moments with a reply that the audience may see, newest first; with
        ``sharing`` (words, themes), only those among them that share a word or a theme (what can score)."""
        rows = await self.pool.fetch(
            """SELECT * FROM (
                   SELECT id, words, themes, arousal, quality, uses, created_at, last_used_at FROM resonance_moments
                   WHERE scope = $1 AND (visible_in IS NULL OR visible_in = $2::text) AND reply_id IS NOT NULL
                   ORDER BY created_at DESC, id DESC LIMIT $3) recent
               WHERE $4::text[] IS NULL OR words && $4::text[] OR themes && $5::text[]
               ORDER BY created_at DESC, id DESC""",
            scope,
            visible_channel,
            limit,
            list(sharing[0]) if sharing else None,
            list(sharing[1]) if sharing else None,
        )
        out = []
        for r in rows:
            try:
                out.append(
                    Candidate(
                        r["id"],
                        tuple(r["words"] or ()),
                        tuple(r["themes"] or ()),
                        clamp(r["arousal"]),
                        clamp(r["quality"]),
                        int(r["uses"] or 0),
                        r["created_at"],
                        r["last_used_at"],
                    )
                )
            except Exception:  # a corrupt row costs itself, not the recall
                log.warning("resonance: moment %s is unreadable; skipped", r["id"])
        return out

    async def recalled(self, scope: str, ids: Sequence[int]) -> dict[int, Recalled]:
        rows = await self.pool.fetch(
            """SELECT r.id, r.message_id, r.reply_id, m.content, r.quality, r.created_at
               FROM resonance_moments r JOIN messages m ON m.id = r.reply_id
               WHERE r.scope = $1 AND r.id = ANY($2::bigint[])""",
            scope,
            list(ids),
        )
        return {
            r["id"]: Recalled(
                r["id"], r["message_id"], r["reply_id"], r["content"], clamp(r["quality"]), r["created_at"]
            )
            for r in rows
        }

    async def query_similar(
        self,
        scope: str,
        metrics: Metrics,
        *,
        top_k: int = 5,
        min_quality: float = 0.0,
        visible_channel: str | None = None,
    ) -> list[Similar]:
        """Past moments nearest ``metrics`` (cosine distance over the metric vector), nearest first."""
        rows = await self.pool.fetch(
            """SELECT r.id, r.message_id, r.created_at, r.quality, r.surprise, r.entropy, r.novelty, r.arousal,
                      r.reply_len_norm, r.unique_ratio, COALESCE(m.content, '') AS reply
               FROM resonance_moments r LEFT JOIN messages m ON m.id = r.reply_id
               WHERE r.scope = $1 AND (r.visible_in IS NULL OR r.visible_in = $2::text) AND r.quality >= $3
               ORDER BY r.created_at DESC, r.id DESC LIMIT $4""",
            scope,
            visible_channel,
            clamp(min_quality),
            SIMILAR_WINDOW,
        )
        q = metrics.vector()
        found = []
        for r in rows:
            m = metrics_of(
                r["surprise"], r["entropy"], r["novelty"], r["arousal"], r["reply_len_norm"], r["unique_ratio"]
            )
            found.append(
                Similar(
                    r["id"],
                    r["created_at"],
                    clamp(r["quality"]),
                    cosine_distance(q, m.vector()),
                    m,
                    r["reply"],
                    r["message_id"],
                )
            )
        found.sort(key=lambda s: (s.distance, -s.quality))
        return found[: max(top_k, 0)]

    async def summary_for_state(
        self, scope: str, metrics: Metrics, *, top_k: int = 10, visible_channel: str | None = None
    ) -> Summary:
        near = await self.query_similar(scope, metrics, top_k=top_k, visible_channel=visible_channel)
        if not near:
            return Summary()
        qs = [s.quality for s in near]
        return Summary(len(near), sum(qs) / len(qs), max(qs), sum(s.distance for s in near) / len(near))

    async def stats(self, scope: str) -> Stats:
        row = await self.pool.fetchrow(
            """SELECT count(*) AS n, count(*) FILTER (WHERE ups + downs > 0) AS rated,
                      COALESCE(avg(quality), 0) AS mean,
                      count(*) FILTER (WHERE quality < 0.2) AS b0,
                      count(*) FILTER (WHERE quality >= 0.2 AND quality < 0.4) AS b1,
                      count(*) FILTER (WHERE quality >= 0.4 AND quality < 0.6) AS b2,
                      count(*) FILTER (WHERE quality >= 0.6 AND quality < 0.8) AS b3,
                      count(*) FILTER (WHERE quality >= 0.8) AS b4
               FROM resonance_moments WHERE scope = $1""",
            scope,
        )
        return Stats(
            row["n"], row["rated"], float(row["mean"]), (row["b0"], row["b1"], row["b2"], row["b3"], row["b4"])
        )

    # --- forgetting --------------------------------------------------------------------------------------------

    async def forgetting(self, conn: asyncpg.Connection, message_ids: Sequence[int], now: datetime) -> int:
        """Inside the forgetting transaction, before the messages go: count the moments that go with them (the
        cascades delete them); a reply deleted on its own leaves its moment without words and marked down;
        signals carried by these messages, and the reactions of people forgotten entirely, are taken back."""
        ids = list(message_ids)
        gone = await conn.fetchval("SELECT count(*) FROM resonance_moments WHERE message_id = ANY($1::bigint[])", ids)
        deleted = await conn.fetch(
            """UPDATE resonance_moments SET reply_id = NULL, words = '{}', themes = '{}', deleted_at = $2
               WHERE reply_id = ANY($1::bigint[]) AND NOT message_id = ANY($1::bigint[]) RETURNING id""",
            ids,
            now,
        )
        for r in deleted:
            await conn.execute(
                """INSERT INTO resonance_signals (moment_id, kind, actor_id, detail, weight, created_at)
                   VALUES ($1, 'deleted', NULL, '', $2, $3) ON CONFLICT DO NOTHING""",
                r["id"],
                DELETED_WEIGHT,
                now,
            )
        # People none of whose messages in a scope remain: their reactions and ratings there go too.
        touched = await conn.fetch(
            """WITH s AS (
                   DELETE FROM resonance_signals g USING resonance_moments r
                   WHERE g.moment_id = r.id AND (
                       g.message_id = ANY($1::bigint[])
                       OR EXISTS (SELECT 1 FROM messages m WHERE m.id = ANY($1::bigint[]) AND NOT m.is_bot
                                  AND m.scope = r.scope AND m.author_id = g.actor_id
                                  AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.scope = r.scope
                                                  AND o.author_id = g.actor_id AND NOT o.id = ANY($1::bigint[]))))
                   RETURNING g.moment_id)
               SELECT DISTINCT moment_id FROM s""",
            ids,
        )
        for r in {r["moment_id"] for r in touched} | {r["id"] for r in deleted}:
            await conn.fetchval(_RECOMPUTE, r)
        return int(gone)
