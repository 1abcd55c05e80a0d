"""The persona's tables: versioned states per (scope, audience) and the evidence log.

Every change writes a new ``persona_versions`` row; the newest is the
current state. Writers of one state serialise on a transaction-level
advisory lock. Forgetting deletes the versions from the first one a
forgotten message shaped, and the layer writes the recomputed state as the
next version after the newest that was deleted: version numbers only rise.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np

from memory.persona.state import Evidence, PersonaState, TopicStance
from memory.vectors import vec


@dataclass(frozen=True)
class Version:
    scope: str
    visible_in: str | None
    version: int
    state: PersonaState
    reason: str
    created_at: datetime


@dataclass(frozen=True)
class EvidenceRow:
    message_id: int
    interaction: int
    version: int
    score: float
    reasoning_type: str
    source_reliability: str
    novelty: float
    topics: list[list[Any]]  # [phrase, canonical, direction, certainty] (no certainty before 2026-11-26: 1)
    features: dict[str, Any]
    scorer: str
    embedding: np.ndarray

    def evidence(self) -> Evidence:
        return Evidence(
            self.message_id,
            self.score,
            self.reasoning_type,
            self.novelty,
            tuple(TopicStance(t[1], int(t[2]), certainty_of(t)) for t in self.topics),
            self.source_reliability,
        )


def certainty_of(topic: Sequence[Any]) -> float:
    """A logged topic's certainty (``[phrase, canonical, direction, certainty]``; 1 for rows logged before it)."""
    return float(topic[3]) if len(topic) > 3 else 1.0


def _key(visible_in: str | None) -> str:
    return visible_in or ""


class PersonaStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def lock(self, conn: asyncpg.Connection, scope: str, visible_in: str | None) -> None:
        """Serialise writers of one state until the end of ``conn``'s transaction."""
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('persona:' || $1 || '/' || $2, 0))", scope, _key(visible_in)
        )

    async def current(
        self, scope: str, visible_in: str | None, *, conn: asyncpg.Connection | asyncpg.Pool | None = None
    ) -> Version | None:
        row = await (conn or self.pool).fetchrow(
            """SELECT * FROM persona_versions WHERE scope = $1 AND COALESCE(visible_in, '') = $2
               ORDER BY version DESC LIMIT 1""",
            scope,
            _key(visible_in),
        )
        return None if row is None else _version(row)

    async def for_audience(self, scope: str, visible_channel: str | None) -> Version | None:
        """The state this audience sees: its restricted channel's own when it has one, else the public one."""
        rows = await self.pool.fetch(
            """SELECT DISTINCT ON (COALESCE(visible_in, '')) * FROM persona_versions
               WHERE scope = $1 AND (visible_in IS NULL OR visible_in = $2::text)
               ORDER BY COALESCE(visible_in, ''), version DESC""",
            scope,
            visible_channel,
        )
        if not rows:
            return None
        own = [r for r in rows if r["visible_in"] is not None]
        return _version(own[0] if own else rows[0])

    async def write(
        self,
        conn: asyncpg.Connection,
        scope: str,
        visible_in: str | None,
        state: PersonaState,
        reason: str,
        now: datetime,
        *,
        after: int = 0,
    ) -> int:
        """A new version of the state (the caller holds the lock); returns its number: one past the newest
        kept, and past ``after`` (the newest before a forgetting deleted versions: numbers never go back)."""
        version = await conn.fetchval(
            """SELECT GREATEST(COALESCE(max(version), 0), $3) + 1 FROM persona_versions
               WHERE scope = $1 AND COALESCE(visible_in, '') = $2""",
            scope,
            _key(visible_in),
            after,
        )
        await conn.execute(
            """INSERT INTO persona_versions (scope, visible_in, version, state, reason, created_at)
               VALUES ($1, $2, $3, $4::jsonb, $5, $6)""",
            scope,
            visible_in,
            version,
            state.as_json(),
            reason[:500],
            now,
        )
        return int(version)

    async def history(self, scope: str, visible_in: str | None, limit: int = 20) -> list[Version]:
        rows = await self.pool.fetch(
            """SELECT * FROM persona_versions WHERE scope = $1 AND COALESCE(visible_in, '') = $2
               ORDER BY version DESC LIMIT $3""",
            scope,
            _key(visible_in),
            limit,
        )
        return [_version(r) for r in rows]

    async def states(self, scope: str | None) -> list[tuple[str, str | None]]:
        """Every (scope, visible_in) with a state, of one scope or of all."""
        rows = await self.pool.fetch(
            """SELECT DISTINCT scope, visible_in FROM persona_versions WHERE ($1::text IS NULL OR scope = $1)
               ORDER BY scope, visible_in NULLS FIRST""",
            scope,
        )
        return [(r["scope"], r["visible_in"]) for r in rows]

    async def has_evidence(self, conn: asyncpg.Connection, message_id: int) -> bool:
        return bool(await conn.fetchval("SELECT 1 FROM persona_evidence WHERE message_id = $1", message_id))

    async def log_evidence(
        self,
        conn: asyncpg.Connection,
        *,
        message_id: int,
        scope: str,
        visible_in: str | None,
        epoch: int,
        interaction: int,
        version: int,
        score: float,
        reasoning_type: str,
        source_reliability: str,
        novelty: float,
        topics: list[list[Any]],
        features: dict[str, Any],
        scorer: str,
        embedding: np.ndarray,
        now: datetime,
    ) -> None:
        await conn.execute(
            """INSERT INTO persona_evidence (message_id, scope, visible_in, epoch, interaction, version, score,
                   reasoning_type, source_reliability, novelty, topics, features, scorer, embedding, created_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12::jsonb, $13, $14, $15)""",
            message_id,
            scope,
            visible_in,
            epoch,
            interaction,
            version,
            score,
            reasoning_type,
            source_reliability,
            novelty,
            topics,
            json.loads(json.dumps(features, default=str)),
            scorer,
            np.asarray(embedding, dtype=np.float32),
            now,
        )

    async def evidence(
        self,
        conn: asyncpg.Connection | asyncpg.Pool,
        scope: str,
        visible_in: str | None,
        epoch: int,
        *,
        exclude: Sequence[int] = (),
    ) -> list[EvidenceRow]:
        rows = await conn.fetch(
            """SELECT * FROM persona_evidence WHERE scope = $1 AND COALESCE(visible_in, '') = $2 AND epoch = $3
                 AND NOT message_id = ANY($4::bigint[])
               ORDER BY interaction, id""",
            scope,
            _key(visible_in),
            epoch,
            list(exclude),
        )
        return [_evidence_row(r) for r in rows]

    async def recent_topics(
        self, conn: asyncpg.Connection, scope: str, visible_in: str | None, limit: int = 10
    ) -> list[str]:
        """The topics (canonical) of the audience's last ``limit`` pieces of evidence, newest first."""
        rows = await conn.fetch(
            """SELECT topics FROM persona_evidence WHERE scope = $1 AND COALESCE(visible_in, '') = $2
               ORDER BY id DESC LIMIT $3""",
            scope,
            _key(visible_in),
            limit,
        )
        named: list[str] = []
        for r in rows:
            topics = json.loads(r["topics"]) if isinstance(r["topics"], str) else r["topics"]
            named.extend(str(t[1]) for t in topics)
        return list(dict.fromkeys(named))

    async def nearest_recent(
        self, conn: asyncpg.Connection, scope: str, visible_in: str | None, vector: np.ndarray, limit: int = 200
    ) -> float | None:
        """The largest cosine between ``vector`` and the audience's last ``limit`` pieces of evidence (None:
        there are none). Computed in the database: shipping 200 vectors per message cost a millisecond."""
        value = await conn.fetchval(
            """SELECT max(1 - (embedding <=> $3)) FROM (
                   SELECT embedding FROM persona_evidence WHERE scope = $1 AND COALESCE(visible_in, '') = $2
                   ORDER BY id DESC LIMIT $4) recent""",
            scope,
            _key(visible_in),
            np.asarray(vector, dtype=np.float32),
            limit,
        )
        return None if value is None else float(value)

    async def evidence_of(self, conn: asyncpg.Connection, message_ids: Sequence[int]) -> list[asyncpg.Record]:
        return await conn.fetch(
            """SELECT scope, visible_in, min(version) AS first_version, count(*) AS n FROM persona_evidence
               WHERE message_id = ANY($1::bigint[]) GROUP BY scope, visible_in ORDER BY scope, visible_in""",
            list(message_ids),
        )

    async def replayed_into(
        self, conn: asyncpg.Connection, scope: str, visible_in: str | None, since: int, version: int
    ) -> None:
        """The evidence of versions ``since`` and later was replayed into ``version`` (a recompute after
        forgetting): it now first shaped that one, so a later forgetting drops from there."""
        await conn.execute(
            """UPDATE persona_evidence SET version = $4
               WHERE scope = $1 AND COALESCE(visible_in, '') = $2 AND version >= $3""",
            scope,
            _key(visible_in),
            since,
            version,
        )

    async def drop_versions_from(
        self, conn: asyncpg.Connection, scope: str, visible_in: str | None, version: int
    ) -> int:
        status = await conn.execute(
            """DELETE FROM persona_versions WHERE scope = $1 AND COALESCE(visible_in, '') = $2 AND version >= $3""",
            scope,
            _key(visible_in),
            version,
        )
        return int(status.split()[-1])


def _version(row: asyncpg.Record) -> Version:
    state = row["state"]
    if isinstance(state, str):
        state = json.loads(state)
    return Version(
        row["scope"], row["visible_in"], row["version"], PersonaState.from_json(state), row["reason"], row["created_at"]
    )


def _evidence_row(r: asyncpg.Record) -> EvidenceRow:
    topics, features = r["topics"], r["features"]
    topics = json.loads(topics) if isinstance(topics, str) else topics
    features = json.loads(features) if isinstance(features, str) else features
    return EvidenceRow(
        r["message_id"],
        r["interaction"],
        r["version"],
        r["score"],
        r["reasoning_type"],
        r["source_reliability"],
        r["novelty"],
        topics,
        features,
        r["scorer"],
        vec(r["embedding"]),
    )
