"""Context archetypes (seed 003): pick a context plan from the message embedding.

Archetypes are rows of ``context_archetypes``: example messages, a cached
centroid, and a context configuration. An archetype is global (scope NULL:
seeded, or the owner's) or a scope's own. A scope sees the global archetypes
plus its own, where its own archetype shadows a global one of the same name,
and ``archetype_overrides`` switch archetypes off (or on) for that scope only.

The router keeps every archetype in memory as one matrix, with an index mask
per scope that has its own archetypes or overrides; classifying a message is
a single matrix-vector product against the vector the Brain already computed
(no second embedding). The cache reloads every ``refresh_seconds`` and at
once when PostgreSQL notifies that an archetype or an override changed, in
whichever process it changed (shards, the CLI): that is how an approval in one
process is in effect in the others. Should the listening connection close, the
router listens again on a new one and reloads.
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

from memory.conversation import require_scope
from memory.embed import Embedder, similarity
from memory.errors import InvalidInput

log = logging.getLogger(__name__)

NOTIFY_CHANNEL = "hippobot_archetypes"
# What a refresh meets while the database is down or restarting: said in one line, not a traceback.
_UNREACHABLE = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,
)
LISTEN_RETRY_S = 5.0  # how soon a router whose LISTEN connection closed tries again


def one_line(exc: BaseException) -> str:
    """Why something failed, for a one-line log: the exception's class and its message (a message of several
    lines joined into one), or the class alone when it has no message."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


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
    place_depth: int = 0  # "where this is discussed" routes the places layer adds (0: none; sql/011)
    memory_words: int | None = None  # words of recalled episodes the prompt may hold (None: memory's default; sql/023)

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
    scope: str | None = None  # None: global
    override_by: str | None = None  # who switched it in the scope it was listed for (None: no override)
    place_depth: int = 0
    memory_words: int | None = None


@dataclass(frozen=True)
class MatchRecord:
    scope: str
    message_id: int
    plan: ContextPlan
    matched_at: datetime
    vector: np.ndarray | None = None  # kept for the dream cycle's archetype analysis


def _archetype(row: asyncpg.Record) -> Archetype:
    keys = set(row.keys())  # asyncpg's keys() is an iterator: a second `in` would search only what is left
    return Archetype(
        id=row["id"],
        name=row["archetype_name"],
        description=row["description"],
        examples=tuple(row["example_messages"]),
        turns=row["context_turns"],
        vectors=row["context_vectors"],
        similarity_threshold=row["similarity_threshold"],
        triple_depth=row["triple_depth"],
        active=row["effective_active"] if "effective_active" in keys else row["active"],
        created_by=row["created_by"],
        approved_by=row["approved_by"],
        match_count=row["match_count"],
        avg_similarity=row["avg_similarity"],
        scope=row["scope"],
        override_by=row["override_by"] if "override_by" in keys else None,
        place_depth=row["place_depth"] if "place_depth" in keys else 0,
        memory_words=row["memory_words"] if "memory_words" in keys else None,
    )


# The archetypes a scope sees ($1; NULL: the global view): its own, and the global ones it does not
# shadow with an own archetype of the same name, with its overrides applied.
_VIEW = """
    SELECT a.*, COALESCE(o.active, a.active) AS effective_active, o.set_by AS override_by
    FROM context_archetypes a
    LEFT JOIN archetype_overrides o ON o.archetype_id = a.id AND o.scope = $1::text
    WHERE a.scope = $1::text
       OR (a.scope IS NULL AND NOT EXISTS (
               SELECT 1 FROM context_archetypes own WHERE own.scope = $1::text
                 AND own.archetype_name = a.archetype_name))"""


class ArchetypeStore:
    """SQL for archetypes and their match log."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def list_archetypes(self, *, scope: str | None = None, active_only: bool = False) -> list[Archetype]:
        """The archetypes ``scope`` routes with (None: the global ones), with its overrides applied."""
        rows = await self._pool.fetch(
            f"SELECT * FROM ({_VIEW}) v WHERE $2 = false OR effective_active ORDER BY archetype_name",
            scope,
            active_only,
        )
        return [_archetype(r) for r in rows]

    async def get(self, name: str, *, scope: str | None = None) -> Archetype:
        """The archetype ``name`` as ``scope`` sees it: its own first, then the global one."""
        row = await self._pool.fetchrow(f"SELECT * FROM ({_VIEW}) v WHERE archetype_name = $2", scope, name)
        if row is None:
            raise InvalidInput(f"unknown archetype {name!r}" + (f" in {scope}" if scope else ""))
        return _archetype(row)

    async def set_examples(self, name: str, examples: Sequence[str], *, scope: str | None = None) -> None:
        """Replace the examples of the global archetype ``name`` (or ``scope``'s own); the trigger
        invalidates the centroid."""
        cleaned = [e.strip() for e in examples if e.strip()]
        if not cleaned:
            raise InvalidInput("an archetype needs at least one non-empty example message")
        status = await self._pool.execute(
            """UPDATE context_archetypes SET example_messages = $2
               WHERE archetype_name = $1 AND scope IS NOT DISTINCT FROM $3::text""",
            name,
            cleaned,
            scope,
        )
        if status.endswith(" 0"):
            raise InvalidInput(f"unknown archetype {name!r}")

    async def set_active(self, name: str, active: bool) -> None:
        """Switch a global archetype for every scope (the owner's power; a guild uses ``set_override``)."""
        status = await self._pool.execute(
            """UPDATE context_archetypes SET active = $2, updated_at = now()
               WHERE archetype_name = $1 AND scope IS NULL""",
            name,
            active,
        )
        if status.endswith(" 0"):
            raise InvalidInput(f"unknown archetype {name!r}")

    async def set_override(self, scope: str, name: str, active: bool, set_by: str) -> Archetype:
        """Switch ``name`` on or off in ``scope`` only, recording who did it.

        ``name`` is resolved as the scope sees it (its own archetype first, then the
        global one); InvalidInput when the scope has no archetype of that name.
        Returns the archetype as the scope now sees it.
        """
        require_scope(scope)
        if not set_by or not set_by.strip():
            raise InvalidInput("an override needs to say who set it")
        async with self._pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(f"SELECT id FROM ({_VIEW}) v WHERE archetype_name = $2", scope, name)
            if row is None:
                raise InvalidInput(f"unknown archetype {name!r} in {scope}")
            await conn.execute(
                """INSERT INTO archetype_overrides (scope, archetype_id, active, set_by, set_at)
                   VALUES ($1, $2, $3, $4, now())
                   ON CONFLICT (scope, archetype_id)
                   DO UPDATE SET active = excluded.active, set_by = excluded.set_by, set_at = excluded.set_at""",
                scope,
                row["id"],
                active,
                set_by,
            )
            updated = await conn.fetchrow(f"SELECT * FROM ({_VIEW}) v WHERE id = $2", scope, row["id"])
        log.info("archetype %s switched %s in %s by %s", name, "on" if active else "off", scope, set_by)
        return _archetype(updated)

    async def all_with_centroids(self) -> list[tuple[Archetype, np.ndarray | None]]:
        """Every archetype of every scope, active or not (the router masks per scope)."""
        rows = await self._pool.fetch("SELECT * FROM context_archetypes ORDER BY archetype_name, scope NULLS FIRST")
        return [(_archetype(r), r["centroid_embedding"]) for r in rows]

    async def overrides(self) -> list[tuple[str, UUID, bool, str]]:
        """Every scope's overrides: (scope, archetype id, active, set_by)."""
        rows = await self._pool.fetch("SELECT scope, archetype_id, active, set_by FROM archetype_overrides")
        return [(r["scope"], r["archetype_id"], r["active"], r["set_by"]) for r in rows]

    async def store_centroid(self, archetype: Archetype, centroid: np.ndarray) -> None:
        # Only if the examples are still the ones the centroid was computed from.
        await self._pool.execute(
            """UPDATE context_archetypes SET centroid_embedding = $2, updated_at = now()
               WHERE id = $1 AND example_messages = $3""",
            archetype.id,
            centroid,
            list(archetype.examples),
        )

    async def match_stats(self, scope: str) -> dict[UUID, tuple[int, float]]:
        """Per archetype, how many of this scope's messages it routed and their mean similarity (a global
        archetype's own counters are summed over every scope; these are this scope's alone)."""
        rows = await self._pool.fetch(
            """SELECT archetype_id, count(*) AS n, avg(similarity) AS avg FROM archetype_matches
               WHERE scope = $1 AND NOT used_default AND archetype_id IS NOT NULL GROUP BY archetype_id""",
            require_scope(scope),
        )
        return {r["archetype_id"]: (int(r["n"]), float(r["avg"])) for r in rows}

    async def record_matches(self, records: Sequence[MatchRecord], conn: asyncpg.Connection | None = None) -> None:
        """Log classifications and fold the used ones into match_count / avg_similarity."""
        if not records:
            return

        async def run(c: asyncpg.Connection) -> None:
            # A message already logged (an absorption retried after a partial failure) is not counted twice.
            seen = {
                r["message_id"]
                for r in await c.fetch(
                    "SELECT message_id FROM archetype_matches WHERE message_id = ANY($1::bigint[])",
                    [r.message_id for r in records],
                )
            }
            fresh = [r for r in records if r.message_id not in seen]
            await c.executemany(
                """INSERT INTO archetype_matches
                       (scope, message_id, archetype_id, similarity, used_default, matched_at, embedding)
                   VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (message_id) DO NOTHING""",
                [
                    (
                        r.scope,
                        r.message_id,
                        r.plan.archetype_id,
                        float(r.plan.similarity),
                        r.plan.used_default,
                        r.matched_at,
                        None if r.vector is None else np.asarray(r.vector, dtype=np.float32),
                    )
                    for r in fresh
                ],
            )
            used: dict[UUID, list[float]] = defaultdict(list)
            for r in fresh:
                if not r.plan.used_default and r.plan.archetype_id is not None:
                    used[r.plan.archetype_id].append(float(r.plan.similarity))
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


@dataclass(frozen=True)
class _Cache:
    """One consistent snapshot: every archetype's centroid, and which rows each scope routes with."""

    archetypes: tuple[Archetype, ...]  # as stored (active: the global switch)
    matrix: np.ndarray  # one unit centroid per archetype
    global_view: tuple[int, ...]  # rows of the global, active archetypes
    scope_views: dict[str, tuple[tuple[int, ...], tuple[bool, ...]]]  # scope -> (rows it sees, active flags)


def scope_view(
    archetypes: Sequence[Archetype], scope: str, overrides: dict[UUID, bool]
) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The rows ``scope`` sees (its own, plus the global ones it does not shadow) and, for each,
    whether it is active there (its override, else the archetype's own switch)."""
    own = {a.name for a in archetypes if a.scope == scope}
    rows = [i for i, a in enumerate(archetypes) if a.scope == scope or (a.scope is None and a.name not in own)]
    return tuple(rows), tuple(overrides.get(archetypes[i].id, archetypes[i].active) for i in rows)


class ArchetypeRouter:
    """Classifies message vectors against the cached centroids of the archetypes a scope routes with."""

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
        self.default_plan = default_plan  # the plan of messages no archetype matches
        self._min_similarity = min_similarity
        self._refresh_seconds = refresh_seconds
        self._cache = _Cache((), np.zeros((0, embedder.dimensions), dtype=np.float32), (), {})
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncpg.Connection | None = None
        self._listener_lost = False  # its connection closed: changes are not heard until it listens again
        self._refresh_lock = asyncio.Lock()

    @property
    def archetypes(self) -> list[Archetype]:
        """The global, active archetypes (what a scope without its own sees)."""
        return self.archetypes_in(None)

    def archetypes_in(self, scope: str | None) -> list[Archetype]:
        """The archetypes ``scope`` routes with now (active there), by name."""
        cache = self._cache
        rows = self._active_rows(cache, scope)
        if scope is None or scope not in cache.scope_views:
            return [cache.archetypes[i] for i in rows]
        overridden = dict(zip(*cache.scope_views[scope]))
        return [replace(cache.archetypes[i], active=overridden[i]) for i in rows]

    async def start(self, pool: asyncpg.Pool) -> None:
        """Load now, then keep the cache fresh (poll + LISTEN) until ``stop``."""
        self._pool = pool
        await self.refresh()
        await self._listen()
        self._task = asyncio.create_task(self._refresh_loop(), name="archetype-refresh")

    async def _listen(self) -> None:
        conn = await self._pool.acquire()
        try:
            await conn.add_listener(NOTIFY_CHANNEL, self._on_notify)
        except BaseException:
            # a connection that failed mid-LISTEN (the server went away under it) is closed, not handed to
            # the next borrower half-way through a protocol exchange
            conn.terminate()
            with contextlib.suppress(Exception):
                await self._pool.release(conn)
            raise
        conn.add_termination_listener(self._on_listener_closed)
        self._listener, self._listener_lost = conn, False

    def _on_listener_closed(self, *_: Any) -> None:
        # The server restarted or the connection was cut: a change notified meanwhile is not heard, and another
        # process's approval would wait for the poll. Listen again and reload (the refresh loop does both).
        self._listener_lost = True
        self._changed.set()

    async def _listen_again(self) -> None:
        old, self._listener = self._listener, None
        if old is not None:  # best effort: asyncpg may have handed a closed connection back to the pool itself
            with contextlib.suppress(Exception):
                old.remove_termination_listener(self._on_listener_closed)
                old.terminate()  # never back to the pool half-open: the next borrower would inherit its state
                await self._pool.release(old)
        await self._listen()
        log.info("archetype changes are heard again (LISTEN on a new connection)")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._listener is not None:
            with contextlib.suppress(Exception):
                self._listener.remove_termination_listener(self._on_listener_closed)
                await self._listener.remove_listener(NOTIFY_CHANNEL, self._on_notify)
            with contextlib.suppress(Exception):  # a closed one may be back in the pool already
                await self._pool.release(self._listener)
            self._listener = None

    def _on_notify(self, *_: Any) -> None:
        self._changed.set()

    async def _refresh_loop(self) -> None:
        while True:
            # while not listening, retry soon: the poll alone would leave other processes' changes unheard
            wait = min(self._refresh_seconds, LISTEN_RETRY_S) if self._listener_lost else self._refresh_seconds
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancel that lands as the event
            # is set (a NOTIFY during stop), and stop() then waits for this loop forever
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()
            self._changed.clear()
            try:
                if self._listener_lost:
                    await self._listen_again()  # before the reload, so no change falls between the two
            except Exception as exc:  # not listening yet is not an error: say so in one line, retry soon
                self._listener_lost = True
                log.warning(
                    "archetype changes are not heard yet (LISTEN failed: %s); trying again in %.0f s",
                    one_line(exc),
                    LISTEN_RETRY_S,
                )
                continue
            try:
                await self.refresh()
            except _UNREACHABLE as exc:  # the database is down or restarting: one line, and try again soon
                self._listener_lost = self._listener_lost or self._listener is None
                log.warning(
                    "archetype refresh failed (the database cannot be reached: %s); keeping %d cached",
                    one_line(exc),
                    len(self._cache.archetypes),
                )
            except Exception as exc:  # a broken refresh keeps the last good cache; one line says why
                log.error(
                    "archetype refresh failed (%s); keeping %d cached",
                    one_line(exc),
                    len(self._cache.archetypes),
                    exc_info=True,
                )  # unexpected: a bug, its traceback helps

    async def refresh(self) -> None:
        """Reload every archetype and override, computing and caching any missing centroid."""
        async with self._refresh_lock:
            rows = await self.store.all_with_centroids()
            overrides = await self.store.overrides()
            archetypes, centroids = [], []
            for archetype, centroid in rows:
                if centroid is None:
                    centroid = await self._centroid(archetype.examples)
                    await self.store.store_centroid(archetype, centroid)
                    log.info("computed centroid for archetype %s (scope %s)", archetype.name, archetype.scope)
                if hasattr(centroid, "to_numpy"):  # pgvector's Vector
                    centroid = centroid.to_numpy()
                vector = np.asarray(centroid, dtype=np.float32)
                archetypes.append(archetype)
                centroids.append(vector / max(float(np.linalg.norm(vector)), 1e-12))
            by_scope: dict[str, dict[UUID, bool]] = defaultdict(dict)
            for scope, archetype_id, active, _ in overrides:
                by_scope[scope][archetype_id] = active
            # Only scopes with their own archetypes or overrides need a view of their own.
            special = {a.scope for a in archetypes if a.scope is not None} | set(by_scope)
            self._cache = _Cache(
                archetypes=tuple(archetypes),
                matrix=np.stack(centroids) if centroids else np.zeros((0, self._embedder.dimensions), np.float32),
                global_view=tuple(i for i, a in enumerate(archetypes) if a.scope is None and a.active),
                scope_views={s: scope_view(archetypes, s, by_scope.get(s, {})) for s in special},
            )

    async def _centroid(self, examples: Sequence[str]) -> np.ndarray:
        vectors = await self._embedder.embed_many(list(examples))
        centroid = vectors.mean(axis=0)
        return (centroid / max(float(np.linalg.norm(centroid)), 1e-12)).astype(np.float32)

    @staticmethod
    def _active_rows(cache: _Cache, scope: str | None) -> tuple[int, ...]:
        if scope is None or scope not in cache.scope_views:
            return cache.global_view
        rows, active = cache.scope_views[scope]
        return tuple(r for r, on in zip(rows, active) if on)

    def similarities(self, vector: np.ndarray, scope: str | None = None) -> list[tuple[Archetype, float]]:
        """Every archetype active in ``scope`` (None: the global ones) with its similarity
        ((1 + cos) / 2), best first."""
        cache = self._cache
        rows = np.asarray(self._active_rows(cache, scope), dtype=np.intp)
        if rows.size == 0:
            return []
        # One product against every centroid, then the scope's mask (no per-call copy of the matrix).
        sims = similarity(cache.matrix @ np.asarray(vector, dtype=np.float32))[rows]
        order = np.argsort(-sims)
        return [(cache.archetypes[rows[i]], float(sims[i])) for i in order]

    def classify(self, vector: np.ndarray, scope: str | None = None, *, asks: bool = False) -> ContextPlan:
        """The plan for an L2-normalised message vector in ``scope`` (None: global archetypes only);
        the default plan when nothing fits. ``asks``: the message is a question that may ask about memory
        (``bot.grounding.asks_of_memory``; not "how are you?"), which an archetype that recalls no memory (an
        acknowledgment's: "Thanks!", "Ok cool"; small talk's) does not fit: a short question ("when is the party?")
        can sit nearest the short messages, and answered without memory it was answered with an invented date.
        The nearest archetype that recalls memory plans it (absorption still logs the nearest)."""
        ranked = self.similarities(vector, scope)
        if not ranked:
            return self.default_plan
        if asks and ranked[0][0].vectors == 0:
            fitting = [(a, s) for a, s in ranked if a.vectors > 0]
            if not fitting or fitting[0][1] < self._min_similarity:
                return replace(
                    self.default_plan,
                    similarity=ranked[0][1],
                    archetype_id=ranked[0][0].id,
                    best_archetype=ranked[0][0].name,
                )
            ranked = fitting
        best, similarity = ranked[0]
        if similarity < self._min_similarity:
            return replace(self.default_plan, similarity=similarity, archetype_id=best.id, best_archetype=best.name)
        return ContextPlan(
            archetype=best.name,
            similarity=similarity,
            turns=best.turns,
            vectors=best.vectors,
            similarity_threshold=best.similarity_threshold,
            triple_depth=best.triple_depth,
            archetype_id=best.id,
            best_archetype=best.name,
            place_depth=best.place_depth,
            memory_words=best.memory_words,
        )
