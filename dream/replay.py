"""Episodic replay and decay (seed 001, 5.3 and 11), by elapsed time.

Replay picks, per scope, the episodes with the highest priority
``lambda1 * salience + lambda2 * recency + lambda3 * diversity`` (diversity:
unlike the episodes already picked in this batch, a representation-cosine
proxy for low gradient overlap) and reinforces them (salience up,
``last_reinforced_at`` now), one batch per scope per night: a second run
the same night replays nothing.

Decay works by the time since an episode was last reinforced (written,
recalled, replayed or pinned), never by how many times the cycle ran: only
trivia (salience below ``trivia_salience``) is forgotten, once unreinforced
for ``forget_after_days``, up to twice that as its salience nears the
ceiling; substantive and pinned episodes are never forgotten by decay.
Near-duplicates are merged until none is left, so the next run finds
nothing to merge: same scope and visibility, keys at least
``duplicate_similarity`` alike, and nearly the same words (a one-word change
such as another day, name or number is another moment, not a duplicate). Forgetting an episode keeps its
messages in the conversation log; only the memory fades. The CPU work (the
replay order) runs in a thread.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from typing import TypedDict

import numpy as np

from dream.cycle import DreamServices, StepReport, history_end
from memory.layers.base import told
from memory.salience import replay_order  # noqa: F401  (the replay priority lives with salience)

REPLAY_BOOST = 0.1  # salience moves this fraction of the way to 1 per replay
MAX_MERGE_PASSES = 10


def replay_budget(batch: int, last_replay: datetime | None, now: datetime, interval: timedelta) -> int:
    """How many episodes a scope may replay now: one batch per ``interval`` (a night), none sooner."""
    if last_replay is None or now - last_replay >= interval:
        return batch
    return 0


async def _scopes(services: DreamServices, sql: str, *args: object) -> list[str]:
    """This run's scope, or every scope the query finds."""
    if services.scope is not None:
        return [services.scope]
    return [r["scope"] for r in await services.pool.fetch(sql, *args)]


async def replay(services: DreamServices, now: datetime) -> StepReport:
    cfg = services.config
    report = StepReport(counts={"replayed": 0, "scopes": 0})
    for scope in await _scopes(services, "SELECT DISTINCT scope FROM episodes"):
        last = await services.pool.fetchval("SELECT max(last_replayed_at) FROM episodes WHERE scope = $1", scope)
        k = replay_budget(cfg.replay_batch, last, now, timedelta(hours=cfg.replay_interval_hours))
        if k <= 0:
            continue
        end = await history_end(services.pool, scope, now)  # the history's own last weeks, not the calendar's
        since = end - timedelta(days=cfg.lookback_days)
        rows = await services.pool.fetch(
            """SELECT id, salience, created_at, embedding FROM episodes
               WHERE scope = $1 AND created_at >= $2 AND consolidated_at IS NULL
               ORDER BY salience DESC, created_at DESC LIMIT 2000""",
            scope,
            since,
        )
        if not rows:
            continue
        salience = np.array([r["salience"] for r in rows], dtype=np.float32)
        age = np.array([max((end - r["created_at"]).total_seconds() / 86400, 0.0) for r in rows], dtype=np.float32)
        vectors = np.stack([r["embedding"].to_numpy() for r in rows])
        order = await asyncio.to_thread(replay_order, salience, age, vectors, k)
        picked = [rows[i]["id"] for i in order]
        await services.pool.execute(
            """UPDATE episodes SET salience = salience + $3 * (1 - LEAST(salience, 1)),
                   replay_count = replay_count + 1, last_replayed_at = $2,
                   last_reinforced_at = GREATEST(last_reinforced_at, $2)
               WHERE scope = $4 AND id = ANY($1::bigint[])""",
            picked,
            now,
            REPLAY_BOOST,
            scope,
        )
        report.counts["replayed"] += len(picked)
        report.counts["scopes"] += 1
    report.headline = told((report.counts["replayed"], "episode{s} replayed (salience raised)"))
    return report


async def decay_and_merge(services: DreamServices, now: datetime) -> StepReport:
    """Forget long-unreinforced trivia, then merge near-duplicates (see the module docstring)."""
    cfg = services.config
    pool = services.pool
    # Unreinforced for longer than its lifetime: forget_after_days x (1 + salience / ceiling).
    forgotten = await pool.execute(
        """DELETE FROM episodes
           WHERE NOT pinned AND salience < $2 AND ($4::text IS NULL OR scope = $4::text)
             AND last_reinforced_at < $1::timestamptz - make_interval(secs => $3 * 86400.0 * (1 + salience / $2))""",
        now,
        cfg.trivia_salience,
        float(cfg.forget_after_days),
        services.scope,
    )
    # Chatter: an episode whose message stated nothing the graph took in (no fact, no tuple waiting), held
    # unreinforced for chatter_after_days x (1 + salience): one-off talk fades in weeks; replay and recall keep
    # what is used. Held: since a dream first saw it (an imported history is not erased by its first night).
    await pool.execute(
        "UPDATE episodes SET first_dreamt_at = $1 WHERE first_dreamt_at IS NULL "
        "AND ($2::text IS NULL OR scope = $2::text)",
        now,
        services.scope,
    )
    faded = await pool.execute(
        """DELETE FROM episodes ep
           WHERE NOT ep.pinned AND ep.salience >= $2 AND ($4::text IS NULL OR ep.scope = $4::text)
             AND GREATEST(ep.last_reinforced_at, ep.first_dreamt_at)
                 < $1::timestamptz - make_interval(secs => $3 * 86400.0 * (1 + ep.salience))
             AND NOT EXISTS (SELECT 1 FROM kg_edge_sources s WHERE s.message_id = ep.message_id)
             AND NOT EXISTS (SELECT 1 FROM kg_gate_log g WHERE g.scope = ep.scope AND g.message_id = ep.message_id)""",
        now,
        cfg.trivia_salience,
        float(cfg.chatter_after_days),
        services.scope,
    )
    # Handed to the graph (memory.semantic.mark_consolidated) and unreinforced since: the facts hold it now.
    handed = await pool.execute(
        """DELETE FROM episodes
           WHERE NOT pinned AND consolidated_at IS NOT NULL AND ($3::text IS NULL OR scope = $3::text)
             AND consolidated_at < $1::timestamptz - make_interval(days => $2)
             AND last_reinforced_at < $1::timestamptz - make_interval(days => $2)""",
        now,
        cfg.consolidated_after_days,
        services.scope,
    )
    merged = 0
    recheck: set[int] | None = None  # None: every recent episode (the first pass)
    for _ in range(MAX_MERGE_PASSES):
        done, recheck = await _merge_pass(services, now, recheck)
        merged += done
        if done == 0 or not recheck:
            break
    gone = int(forgotten.split()[-1]) + int(faded.split()[-1])
    consolidated = int(handed.split()[-1])
    return StepReport(
        counts={"forgotten": gone, "consolidated": consolidated, "merged": merged},
        headline=told(
            (gone, "trivial or one-off episode{s} faded"),
            (consolidated, "episode{s} let go, their facts kept"),
            (merged, "repeated episode{s} merged"),
        ),
    )


async def _merge_pass(services: DreamServices, now: datetime, only: set[int] | None) -> tuple[int, set[int]]:
    """One pass over recent episodes (or just ``only``): each merged with its nearest near-duplicate
    (same scope and visibility), by the HNSW index. Returns how many were merged away, and the
    episodes whose nearest neighbour may have changed (the survivors of a merge, and those whose
    nearest was merged away): the next pass looks at those only, so passes after the first cost
    what the merges did, not the size of the window."""
    cfg = services.config
    pool = services.pool
    pairs = await _nearest_pairs(
        pool, now - timedelta(days=cfg.lookback_days), cfg.duplicate_similarity, services.scope, only
    )
    merged = 0
    gone: set[int] = set()
    recheck: set[int] = set()
    for pair in pairs:
        a, b = pair["a"], pair["b"]
        if a in gone or b in gone:
            recheck |= {a, b} - gone  # its nearest went: look again next pass
            continue
        if not same_words(pair["a_text"], pair["b_text"]):
            continue
        async with pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                """SELECT id, pinned, salience, created_at, last_reinforced_at FROM episodes
                   WHERE id = ANY($1::bigint[]) FOR UPDATE""",
                [a, b],
            )
            if len(rows) != 2:
                continue
            keep, drop = sorted(rows, key=lambda r: (not r["pinned"], -r["salience"], r["created_at"], r["id"]))
            if drop["pinned"]:
                continue
            await conn.execute(
                """UPDATE episodes SET salience = GREATEST(salience, $2), merged_count = merged_count + 1,
                       last_reinforced_at = GREATEST(last_reinforced_at, $3)
                   WHERE id = $1""",
                keep["id"],
                drop["salience"],
                drop["last_reinforced_at"],
            )
            await conn.execute("DELETE FROM episodes WHERE id = $1", drop["id"])
            gone.add(drop["id"])
            recheck.add(keep["id"])
            merged += 1
    return merged, recheck - gone


EXACT_GROUP_LIMIT = 200_000  # episodes of one scope and audience searched exactly in memory; more: HNSW


class _Pair(TypedDict):
    a: int
    b: int
    a_text: str
    b_text: str


async def _nearest_pairs(
    pool, since: datetime, threshold: float, scope: str | None, only: set[int] | None
) -> list[_Pair]:
    """(a, b, a_text, b_text) for each recent episode ``a`` (or each of ``only``) whose nearest other
    episode ``b`` of the same scope and audience is at least ``threshold`` alike ((1 + cos) / 2).

    Exact, by one matrix product per scope and audience: the per-episode HNSW query this replaces
    cost about 4 ms each with a filter on a small scope (38 s for 10,000 new episodes). A group past
    EXACT_GROUP_LIMIT episodes still goes through the index."""
    recent = await pool.fetch(
        """SELECT id, scope, visible_in FROM episodes
           WHERE created_at >= $1 AND ($2::text IS NULL OR scope = $2::text)
             AND ($3::bigint[] IS NULL OR id = ANY($3::bigint[]))""",
        since,
        scope,
        None if only is None else sorted(only),
    )
    groups: dict[tuple[str, str | None], list[int]] = {}
    for r in recent:
        groups.setdefault((r["scope"], r["visible_in"]), []).append(r["id"])
    found: list[tuple[int, int]] = []
    for (group_scope, visible_in), ids in groups.items():
        size = await pool.fetchval(
            "SELECT count(*) FROM episodes WHERE scope = $1 AND visible_in IS NOT DISTINCT FROM $2",
            group_scope,
            visible_in,
        )
        if size > EXACT_GROUP_LIMIT:
            found += await _nearest_by_index(pool, ids, threshold)
            continue
        rows = await pool.fetch(
            "SELECT id, embedding FROM episodes WHERE scope = $1 AND visible_in IS NOT DISTINCT FROM $2 ORDER BY id",
            group_scope,
            visible_in,
        )
        found += await asyncio.to_thread(
            _nearest_exact, [r["id"] for r in rows], [r["embedding"].to_numpy() for r in rows], ids, threshold
        )
    if not found:
        return []
    texts = {
        r["id"]: r["content"]
        for r in await pool.fetch(
            "SELECT id, content FROM episodes WHERE id = ANY($1::bigint[])", sorted({i for p in found for i in p})
        )
    }
    return [{"a": a, "b": b, "a_text": texts[a], "b_text": texts[b]} for a, b in sorted(found)]


def _nearest_exact(
    all_ids: list[int], vectors: list[np.ndarray], query_ids: list[int], threshold: float
) -> list[tuple[int, int]]:
    matrix = np.stack(vectors).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    position = {i: n for n, i in enumerate(all_ids)}
    rows = np.array([position[i] for i in query_ids])
    out: list[tuple[int, int]] = []
    for start in range(0, len(rows), 1024):
        chunk = rows[start : start + 1024]
        sims = matrix[chunk] @ matrix.T
        sims[np.arange(len(chunk)), chunk] = -np.inf  # not itself
        best = sims.argmax(axis=1)
        alike = (1.0 + sims[np.arange(len(chunk)), best]) / 2.0
        out += [(all_ids[a], all_ids[b]) for a, b, s in zip(chunk, best, alike) if s >= threshold]
    return out


async def _nearest_by_index(pool, ids: list[int], threshold: float) -> list[tuple[int, int]]:
    rows = await pool.fetch(
        """SELECT e.id AS a, n.id AS b FROM episodes e
           CROSS JOIN LATERAL (
               SELECT o.id, 1 - (o.embedding <=> e.embedding) / 2 AS sim FROM episodes o
               WHERE o.scope = e.scope AND o.id <> e.id AND o.visible_in IS NOT DISTINCT FROM e.visible_in
               ORDER BY o.embedding <=> e.embedding LIMIT 1) n
           WHERE e.id = ANY($1::bigint[]) AND n.sim >= $2""",
        ids,
        threshold,
    )
    return [(r["a"], r["b"]) for r in rows]


def same_words(a: str, b: str, *, min_overlap: float = 0.9) -> bool:
    """Whether two episodes say nearly the same words (Jaccard of their message lines' word sets;
    the speaker's name prefix is left out)."""

    def words(text: str) -> set[str]:
        first = text.split("\n", 1)[0]
        return set(re.findall(r"[^\W_]+", first.partition(": ")[2].lower() or first.lower()))

    wa, wb = words(a), words(b)
    if not wa or not wb:
        return wa == wb
    return len(wa & wb) / len(wa | wb) >= min_overlap


async def expire_proposals(services: DreamServices, now: datetime) -> StepReport:
    expired = await services.governance.expire(now, scope=services.scope)
    return StepReport(counts={"expired": expired}, headline=told((expired, "proposal{s} expired unanswered")))
