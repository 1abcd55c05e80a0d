"""Episodic replay and decay (seed 001, 5.3 and 11), first version.

Replay picks, per scope, the episodes with the highest priority
``lambda1 * salience + lambda2 * recency + lambda3 * diversity`` (diversity:
unlike the episodes already picked in this batch, a representation-cosine
proxy for low gradient overlap) and reinforces them. Decay lowers the
salience of old episodes nobody recalled or replayed, forgets those that fall
below a floor, and merges near-duplicates. Pinned episodes never decay and
are never merged away. Forgetting an episode keeps its messages in the
conversation log; only the memory fades.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np

from dream.cycle import DreamServices, StepReport

LAMBDA_SALIENCE, LAMBDA_RECENCY, LAMBDA_DIVERSITY = 0.5, 0.3, 0.2
RECENCY_DAYS = 7.0
REPLAY_BOOST = 0.1  # salience moves this fraction of the way to 1 per replay


def replay_order(salience: np.ndarray, age_days: np.ndarray, vectors: np.ndarray, k: int) -> list[int]:
    """Indices of the k episodes to replay, highest priority first (greedy, diversity-aware)."""
    recency = np.exp(-age_days / RECENCY_DAYS)
    base = LAMBDA_SALIENCE * salience + LAMBDA_RECENCY * recency
    chosen: list[int] = []
    for _ in range(min(k, len(salience))):
        if chosen:
            diversity = 1.0 - np.clip((vectors @ vectors[chosen].T).max(axis=1), 0.0, 1.0)
        else:
            diversity = np.ones(len(salience))
        score = base + LAMBDA_DIVERSITY * diversity
        score[chosen] = -math.inf
        chosen.append(int(np.argmax(score)))
    return chosen


async def replay(services: DreamServices, now: datetime) -> StepReport:
    cfg = services.config
    report = StepReport(counts={"replayed": 0, "scopes": 0})
    scopes = await services.pool.fetch(
        "SELECT DISTINCT scope FROM episodes WHERE created_at >= $1", now - timedelta(days=cfg.lookback_days)
    )
    for row in scopes:
        rows = await services.pool.fetch(
            """SELECT id, salience, created_at, embedding FROM episodes
               WHERE scope = $1 AND created_at >= $2 ORDER BY salience DESC, created_at DESC LIMIT 2000""",
            row["scope"], now - timedelta(days=cfg.lookback_days),
        )
        if not rows:
            continue
        salience = np.array([r["salience"] for r in rows], dtype=np.float32)
        age = np.array([max((now - r["created_at"]).total_seconds() / 86400, 0.0) for r in rows], dtype=np.float32)
        vectors = np.stack([r["embedding"].to_numpy() for r in rows])
        picked = [rows[i]["id"] for i in replay_order(salience, age, vectors, cfg.replay_batch)]
        await services.pool.execute(
            """UPDATE episodes SET salience = salience + $3 * (1 - LEAST(salience, 1)),
                   replay_count = replay_count + 1, last_replayed_at = $2
               WHERE scope = $4 AND id = ANY($1::bigint[])""",
            picked, now, REPLAY_BOOST, row["scope"],
        )
        report.counts["replayed"] += len(picked)
        report.counts["scopes"] += 1
    return report


async def decay_and_merge(services: DreamServices, now: datetime) -> StepReport:
    cfg = services.config
    cutoff = now - timedelta(days=cfg.decay_after_days)
    pool = services.pool
    decayed = await pool.execute(
        """UPDATE episodes SET salience = salience * $2
           WHERE NOT pinned AND created_at < $1
             AND (last_recalled_at IS NULL OR last_recalled_at < $1)
             AND (last_replayed_at IS NULL OR last_replayed_at < $1)""",
        cutoff, cfg.decay_factor,
    )
    forgotten = await pool.execute(
        "DELETE FROM episodes WHERE NOT pinned AND created_at < $1 AND salience < $2",
        cutoff, cfg.forget_below_salience,
    )
    # Near-duplicates among recent episodes, within a scope, by the HNSW index.
    pairs = await pool.fetch(
        """SELECT e.id AS a, n.id AS b FROM episodes e
           CROSS JOIN LATERAL (
               SELECT o.id, 1 - (o.embedding <=> e.embedding) / 2 AS sim FROM episodes o
               WHERE o.scope = e.scope AND o.id <> e.id ORDER BY o.embedding <=> e.embedding LIMIT 1) n
           WHERE e.created_at >= $1 AND n.sim >= $2""",
        now - timedelta(days=cfg.lookback_days), cfg.duplicate_similarity,
    )
    merged = 0
    gone: set[int] = set()
    for pair in pairs:
        a, b = pair["a"], pair["b"]
        if a in gone or b in gone:
            continue
        async with pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT id, pinned, salience, created_at FROM episodes WHERE id = ANY($1::bigint[]) FOR UPDATE", [a, b]
            )
            if len(rows) != 2:
                continue
            keep, drop = sorted(rows, key=lambda r: (not r["pinned"], -r["salience"], r["created_at"]))
            if drop["pinned"]:
                continue
            await conn.execute(
                """UPDATE episodes SET salience = GREATEST(salience, $2), merged_count = merged_count + 1
                   WHERE id = $1""",
                keep["id"], drop["salience"],
            )
            await conn.execute("DELETE FROM episodes WHERE id = $1", drop["id"])
            gone.add(drop["id"])
            merged += 1
    return StepReport(counts={
        "decayed": int(decayed.split()[-1]), "forgotten": int(forgotten.split()[-1]), "merged": merged,
    })


async def expire_proposals(services: DreamServices, now: datetime) -> StepReport:
    return StepReport(counts={"expired": await services.governance.expire(now)})


async def knowledge_graph(services: DreamServices, now: datetime) -> StepReport:
    """Prune faded, doubtful edges (never pinned ones) and merge near-duplicate entity nodes."""
    if services.semantic is None:
        return StepReport(notes=["knowledge graph disabled"])
    cfg = services.config
    pruned = await services.semantic.prune(
        now, min_retrievability=cfg.kg_prune_retrievability, min_confidence=cfg.kg_prune_confidence)
    merged = await services.semantic.merge_near_duplicates()
    return StepReport(counts={"pruned_edges": pruned, "merged_nodes": merged})
