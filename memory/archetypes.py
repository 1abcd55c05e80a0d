"""Context archetypes (seed 003): pick a context plan from the message embedding.

Archetypes are rows of ``context_archetypes``: example messages, a cached
centroid, and a context configuration. The router keeps the active ones in
memory as one matrix; classifying a message is a single matrix-vector product
against the vector the Brain already computed (no second embedding). The cache
reloads every ``refresh_seconds`` and at once when PostgreSQL notifies that an
archetype changed (trigger ``archetypes_changed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from memory.embed import Embedder, similarity
from memory.errors import InvalidInput

log = logging.getLogger(__name__)

NOTIFY_CHANNEL = "hippobot_archetypes"


@dataclass(frozen=True)
class ContextPlan:
    """How much context to load for one message."""

    archetype: str | None  # None: no archetype matched well, the default plan
    similarity: float  # similarity of the best archetype (also when it was not used)
    turns: int
    vectors: int
    similarity_threshold: float
    triple_depth: int
    archetype_id: UUID | None = None  # the best archetype, used or not
    best_archetype: str | None = None

    @property
    def used_default(self) -> bool:
        return self.archetype is None


@dataclass(frozen=True)
class Archetype:
    id: UUID
    name: str
    description: str | None
    examples: tuple[str, ...]
    turns: int
    vectors: int
    similarity_threshold: float
    triple_depth: int
    active: bool
    created_by: str | None
    approved_by: str | None
    match_count: int
    avg_similarity: float | None


@dataclass(frozen=True)
class MatchRecord:
    scope: str
    message_id: int
    plan: ContextPlan
    matched_at: datetime
    vector: np.ndarray | None = None  # kept for the dream cycle's archetype analysis


def _archetype(row: asyncpg.Record) -> Archetype:
    return Archetype(
        id=row["id"],
        name=row["archetype_name"],
        description=row["description"],
        examples=tuple(row["example_messages"]),
        turns=row["context_turns"],
        vectors=row["context_vectors"],
        similarity_threshold=row["similarity_threshold"],
        triple_depth=row["triple_depth"],
        active=row["active"],
        created_by=row["created_by"],
        approved_by=row["approved_by"],
        match_count=row["match_count"],
        avg_similarity=row["avg_similarity"],
    )


class ArchetypeStore:
    """SQL for archetypes and their match log."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def list_archetypes(self, *, active_only: bool = False) -> list[Archetype]:
        rows = await self._pool.fetch(
            "SELECT * FROM context_archetypes WHERE $1 = false OR active ORDER BY archetype_name",
            active_only,
        )
        return [_archetype(r) for r in rows]

    async def get(self, name: str) -> Archetype:
        row = await self._pool.fetchrow("SELECT * FROM context_archetypes WHERE archetype_name = $1", name)
        if row is None:
            raise InvalidInput(f"unknown archetype {name!r}")
        return _archetype(row)

    async def set_examples(self, name: str, examples: Sequence[str]) -> None:
        """Replace the examples; the trigger invalidates the centroid."""
        cleaned = [e.strip() for e in examples if e.strip()]
        if not cleaned:
            raise InvalidInput("an archetype needs at least one non-empty example message")
        status = await self._pool.execute(
            "UPDATE context_archetypes SET example_messages = $2 WHERE archetype_name = $1", name, cleaned
        )
        if status.endswith(" 0"):
            raise InvalidInput(f"unknown archetype {name!r}")

    async def set_active(self, name: str, active: bool) -> None:
        status = await self._pool.execute(
            "UPDATE context_archetypes SET active = $2, updated_at = now() WHERE archetype_name = $1",
            name,
            active,
        )
        if status.endswith(" 0"):
            raise InvalidInput(f"unknown archetype {name!r}")

    async def active_with_centroids(self) -> list[tuple[Archetype, np.ndarray | None]]:
        rows = await self._pool.fetch("SELECT * FROM context_archetypes WHERE active ORDER BY archetype_name")
        return [(_archetype(r), r["centroid_embedding"]) for r in rows]

    async def store_centroid(self, archetype: Archetype, centroid: np.ndarray) -> None:
        # Only if the examples are still the ones the centroid was computed from.
        await self._pool.execute(
            """UPDATE context_archetypes SET centroid_embedding = $2, updated_at = now()
               WHERE id = $1 AND example_messages = $3""",
            archetype.id,
            centroid,
            list(archetype.examples),
        )

    async def record_matches(
        self, records: Sequence[MatchRecord], conn: asyncpg.Connection | None = None
    ) -> None:
        """Log classifications and fold the used ones into match_count / avg_similarity."""
        if not records:
            return
        rows = [
            (r.scope, r.message_id, r.plan.archetype_id, float(r.plan.similarity), r.plan.used_default, r.matched_at,
             None if r.vector is None else np.asarray(r.vector, dtype=np.float32))
            for r in records
        ]
        used: dict[UUID, list[float]] = defaultdict(list)
        for r in records:
            if not r.plan.used_default and r.plan.archetype_id is not None:
                used[r.plan.archetype_id].append(float(r.plan.similarity))

        async def run(c: asyncpg.Connection) -> None:
            await c.executemany(
                """INSERT INTO archetype_matches
                       (scope, message_id, archetype_id, similarity, used_default, matched_at, embedding)
                   VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (message_id) DO NOTHING""",
                rows,
            )
            for archetype_id, sims in used.items():
                await c.execute(
                    """UPDATE context_archetypes SET
                           avg_similarity = (COALESCE(avg_similarity, 0) * match_count + $2) / (match_count + $3),
                           match_count = match_count + $3
                       WHERE id = $1""",
                    archetype_id,
                    sum(sims),
                    len(sims),
                )

        if conn is not None:
            await run(conn)
        else:
            async with self._pool.acquire() as c, c.transaction():
                await run(c)


class ArchetypeRouter:
    """Classifies message vectors against the cached centroids of active archetypes."""

    def __init__(
        self,
        store: ArchetypeStore,
        embedder: Embedder,
        default_plan: ContextPlan,
        *,
        min_similarity: float,
        refresh_seconds: float = 60.0,
    ) -> None:
        self.store = store
        self._embedder = embedder
        self._default = default_plan
        self._min_similarity = min_similarity
        self._refresh_seconds = refresh_seconds
        self._archetypes: list[Archetype] = []
        self._matrix = np.zeros((0, embedder.dimensions), dtype=np.float32)
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncpg.Connection | None = None
        self._refresh_lock = asyncio.Lock()
        self.loaded_at: datetime | None = None

    @property
    def archetypes(self) -> list[Archetype]:
        return list(self._archetypes)

    async def start(self, pool: asyncpg.Pool) -> None:
        """Load now, then keep the cache fresh (poll + LISTEN) until ``stop``."""
        self._pool = pool
        await self.refresh()
        self._listener = await pool.acquire()
        await self._listener.add_listener(NOTIFY_CHANNEL, self._on_notify)
        self._task = asyncio.create_task(self._refresh_loop(), name="archetype-refresh")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.remove_listener(NOTIFY_CHANNEL, self._on_notify)
            await self._pool.release(self._listener)
            self._listener = None

    def _on_notify(self, *_: Any) -> None:
        self._changed.set()

    async def _refresh_loop(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=self._refresh_seconds)
            self._changed.clear()
            try:
                await self.refresh()
            except Exception:  # a broken refresh keeps the last good cache
                log.exception("archetype refresh failed; keeping %d cached", len(self._archetypes))

    async def refresh(self) -> None:
        """Reload active archetypes, computing and caching any missing centroid."""
        async with self._refresh_lock:
            rows = await self.store.active_with_centroids()
            archetypes, centroids = [], []
            for archetype, centroid in rows:
                if centroid is None:
                    centroid = await self._centroid(archetype.examples)
                    await self.store.store_centroid(archetype, centroid)
                    log.info("computed centroid for archetype %s", archetype.name)
                if hasattr(centroid, "to_numpy"):  # pgvector's Vector
                    centroid = centroid.to_numpy()
                vector = np.asarray(centroid, dtype=np.float32)
                archetypes.append(archetype)
                centroids.append(vector / max(float(np.linalg.norm(vector)), 1e-12))
            self._archetypes = archetypes
            self._matrix = (
                np.stack(centroids) if centroids else np.zeros((0, self._embedder.dimensions), np.float32)
            )
            self.loaded_at = datetime.now().astimezone()

    async def _centroid(self, examples: Sequence[str]) -> np.ndarray:
        vectors = await self._embedder.embed_many(list(examples))
        centroid = vectors.mean(axis=0)
        return (centroid / max(float(np.linalg.norm(centroid)), 1e-12)).astype(np.float32)

    def similarities(self, vector: np.ndarray) -> list[tuple[Archetype, float]]:
        """Every active archetype with its similarity ((1 + cos) / 2), best first."""
        if not self._archetypes:
            return []
        sims = similarity(self._matrix @ np.asarray(vector, dtype=np.float32))
        order = np.argsort(-sims)
        return [(self._archetypes[i], float(sims[i])) for i in order]

    def classify(self, vector: np.ndarray) -> ContextPlan:
        """The plan for an L2-normalised message vector; the default plan when nothing fits."""
        ranked = self.similarities(vector)
        if not ranked:
            return self._default
        best, similarity = ranked[0]
        if similarity < self._min_similarity:
            return replace(
                self._default, similarity=similarity, archetype_id=best.id, best_archetype=best.name
            )
        return ContextPlan(
            archetype=best.name,
            similarity=similarity,
            turns=best.turns,
            vectors=best.vectors,
            similarity_threshold=best.similarity_threshold,
            triple_depth=best.triple_depth,
            archetype_id=best.id,
            best_archetype=best.name,
        )
