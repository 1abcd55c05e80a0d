"""The dream cycle: an ordered list of steps over what the day left behind.

Each step is ``async (services, now) -> StepReport``. A failing step is
recorded and the others still run. Every run is a ``dream_runs`` row. A
PostgreSQL advisory lock lets only one process dream at a time, and a
scheduled slot runs once even when several bot processes share a database.

A run for one scope (a guild's ``/dream run``) gives every step
``services.scope`` and each step works on that scope only; the nightly run
has scope None and processes every scope, each separately. Steps do their
CPU work (clustering, ordering, merging) in threads, never on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import asyncpg

from dream.governance import Governance, Proposal
from memory.archetypes import ArchetypeRouter, ArchetypeStore
from memory.conversation import require_scope
from memory.db import session_lock
from memory.embed import Embedder
from memory.salience import TRIVIA

log = logging.getLogger(__name__)

DREAM_LOCK_KEY = 0x647265616D  # "dream"


class DreamChannel(Protocol):
    """Where proposals and digests go: the Discord dream channel, or the console."""

    async def post_proposal(self, proposal: Proposal) -> str | None: ...  # returns a reference to store

    async def post_digest(self, text: str, chart: Path | None) -> None: ...


class Namer(Protocol):
    """Optionally names a proposal with a capable LLM; returns None to keep the default."""

    async def name(self, examples: Sequence[str], terms: Sequence[str]) -> tuple[str, str] | None: ...


@dataclass(frozen=True)
class DreamConfig:
    lookback_days: int = 30
    low_similarity: float = 0.68  # matches below this count as poorly served
    min_cluster_size: int = 5
    # A theme is proposed only when it recurs: said by this many people, on this many days (dream.themes)
    theme_people: int = 3
    theme_days: int = 3
    theme_request_share: float = 0.7  # ... and at least this share of its messages ask for something (dream.requests)
    # A theme whose centroid's nearest archetype leads the second by this much, and which that archetype
    # routed (most messages got its plan, not the default), is that archetype's kind: proposed only if
    # its plan would change (dream.archetype_analysis).
    served_margin: float = 0.03
    cluster_distance: float = 0.72  # average-linkage cosine distance that separates clusters
    theme_merge_similarity: float = 0.70  # clusters whose centroids are this alike are one theme (dream.themes)
    same_idea_similarity: float = 0.9  # a candidate this close to an open/decided proposal is not proposed again
    sunk_similarity_drop: float = 0.05  # recent avg similarity this far below the archetype's average
    min_recent_matches: int = 10
    # Decay by elapsed time (dream.replay): trivia, salience below this, is forgotten once unreinforced
    # for forget_after_days (up to twice that as its salience nears the ceiling); nothing else is.
    trivia_salience: float = TRIVIA
    forget_after_days: int = 60
    # An episode the graph has taken over (every fact it states said again, rehearsed, or superseded: see
    # memory.semantic.mark_consolidated) goes once it and its marking are this many days unreinforced.
    consolidated_after_days: int = 14
    # An episode whose message stated no fact at all (chatter with content) goes once unreinforced for
    # chatter_after_days x (1 + salience): 45-60 days. One that states a fact the graph does not hold on its
    # own yet stays (it is that fact's evidence).
    chatter_after_days: float = 30.0
    duplicate_similarity: float = 0.985  # (1 + cos) / 2; cos 0.97
    replay_batch: int = 32
    replay_interval_hours: float = 20.0  # one replay batch per scope per night
    kg_prune_retrievability: float = 0.6
    kg_prune_confidence: float = 0.6
    output_dir: Path = Path(".")
    default_plan: tuple[tuple[str, float], ...] = (
        ("context_turns", 8),
        ("context_vectors", 5),
        ("similarity_threshold", 0.65),
        ("triple_depth", 1),
    )


@dataclass
class DreamServices:
    pool: asyncpg.Pool
    embedder: Embedder
    archetypes: ArchetypeStore
    router: ArchetypeRouter
    governance: Governance
    config: DreamConfig
    channel: DreamChannel | None = None
    namer: Namer | None = None
    scope: str | None = None  # this run's scope; None: every scope, each processed separately
    run_id: int | None = None
    reports: dict[str, StepReport] = field(default_factory=dict)  # earlier steps of this run


async def history_end(pool: asyncpg.Pool, scope: str | None, now: datetime) -> datetime:
    """Where the dream's look-back windows end for ``scope`` (None: every scope): its latest message up to
    ``now``, or ``now`` when it has none. A history imported today is looked at over its own last weeks, not
    the calendar's, so it is replayed and analysed without ``--now``; on a live server this is about now."""
    latest = await pool.fetchval(
        "SELECT max(created_at) FROM messages WHERE ($1::text IS NULL OR scope = $1::text) AND created_at <= $2",
        scope,
        now,
    )
    return latest or now


@dataclass
class StepReport:
    counts: dict[str, int | float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    headline: str = ""  # what it did, in plain words, for the digest ("" when nothing worth telling)
    error: str | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "notes": self.notes, "error": self.error, "seconds": round(self.seconds, 3)}


Step = Callable[[DreamServices, datetime], Awaitable[StepReport]]


@dataclass(frozen=True)
class RunReport:
    run_id: int | None
    status: str  # ok | partial | failed | skipped
    steps: dict[str, StepReport]
    reason: str | None = None
    scope: str | None = None  # the scope it dreamt for (None: every scope)

    def render(self) -> str:
        if self.status == "skipped":
            return f"dream cycle skipped: {self.reason}"
        lines = [f"dream run #{self.run_id}" + (f" for {self.scope}" if self.scope else "") + f": {self.status}"]
        for name, step in self.steps.items():
            counts = ", ".join(f"{k}={v}" for k, v in step.counts.items()) or "-"
            lines.append(f"  {name:<20} {'FAILED: ' + step.error if step.error else counts}")
            lines += [f"      {note}" for note in step.notes]
        return "\n".join(lines)


class DreamCycle:
    def __init__(self, services: DreamServices, steps: Sequence[tuple[str, Step]]) -> None:
        self.services = services
        self.steps = list(steps)

    async def run(
        self, now: datetime, *, trigger: str = "manual", slot: datetime | None = None, scope: str | None = None
    ) -> RunReport:
        """Run every step once, for ``scope`` only when given (None: every scope), unless another
        process is dreaming (or already ran this slot)."""
        if scope is not None:
            require_scope(scope)
        pool = self.services.pool
        async with session_lock(pool, DREAM_LOCK_KEY) as taken:
            if not taken:
                return RunReport(None, "skipped", {}, "another process is dreaming right now")
            return await self._run_locked(now, trigger, slot, scope)

    async def _run_locked(self, now: datetime, trigger: str, slot: datetime | None, scope: str | None) -> RunReport:
        pool = self.services.pool
        # Holding the dream lock, any run still 'running' belongs to a process that stopped part-way.
        await pool.execute("UPDATE dream_runs SET status = 'abandoned', finished_at = $1 WHERE status = 'running'", now)
        try:
            run_id = await pool.fetchval(
                """INSERT INTO dream_runs (trigger, scheduled_for, started_at, scope)
                   VALUES ($1, $2, $3, $4) RETURNING id""",
                trigger,
                slot,
                now,
                scope,
            )
        except asyncpg.UniqueViolationError:
            return RunReport(None, "skipped", {}, f"the {slot:%Y-%m-%d %H:%M} run already happened")
        # This run's own view of the services: its id, scope and the reports of the steps so far.
        services = replace(self.services, scope=scope, run_id=run_id, reports={})
        began = time.perf_counter()
        try:
            return await self._steps(services, now, run_id, trigger, scope)
        except asyncio.CancelledError:  # shutting down: say so, and keep what the finished steps did
            await asyncio.shield(
                pool.execute(
                    "UPDATE dream_runs SET finished_at = $3, status = 'abandoned', report = $2::jsonb WHERE id = $1",
                    run_id,
                    {n: r.as_dict() for n, r in services.reports.items()},
                    now + timedelta(seconds=time.perf_counter() - began),
                )
            )
            raise

    async def _steps(
        self, services: DreamServices, now: datetime, run_id: int, trigger: str, scope: str | None
    ) -> RunReport:
        pool = self.services.pool
        began = time.perf_counter()
        for name, step in self.steps:
            started = time.perf_counter()
            try:
                report = await step(services, now)
            except Exception as exc:  # recorded; the other steps still run
                log.exception("dream step %s failed (run %s)", name, run_id)
                report = StepReport(error=f"{type(exc).__name__}: {exc}")
                report.notes.append(traceback.format_exc(limit=3).splitlines()[-1])
            report.seconds = time.perf_counter() - started
            services.reports[name] = report
        failed = [n for n, r in services.reports.items() if r.error]
        status = "ok" if not failed else ("failed" if len(failed) == len(self.steps) else "partial")
        await pool.execute(
            "UPDATE dream_runs SET finished_at = $4, status = $2, report = $3::jsonb WHERE id = $1",
            run_id,
            status,
            {n: r.as_dict() for n, r in services.reports.items()},
            now + timedelta(seconds=time.perf_counter() - began),  # the run's own clock: started_at is ``now``
        )
        log.info("dream run %s (%s) for %s: %s", run_id, trigger, scope or "every scope", status)
        return RunReport(run_id, status, dict(services.reports), scope=scope)
