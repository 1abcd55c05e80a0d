"""HEI-NW's associative index (seed 001, 5.2-5.3): k-WTA sparse keys in FAISS, with modern-Hopfield completion.

A rebuildable cache of PostgreSQL, one per scope: the scope's episode keys
(the ``episodes.embedding`` column, MiniLM vectors of "Name: text") are
projected by a fixed random matrix into a wider space and sparsified by
k-winners-take-all (the dentate gyrus's pattern separation), and held in a
FAISS inner-product index. A query is first completed by a modern Hopfield
network over its nearest stored patterns (CA3's pattern completion: a few
steps of ``xi <- X^T softmax(beta * X xi)``, blended with the query), then
sparsified the same way and searched. Each part is switchable, so
``bench/memory_eval.py`` can measure what it adds.

The cache is rebuilt when the scope's episode count or newest id moves (so
another process's import is seen), when this process writes, edits or
forgets episodes (the layer calls :meth:`invalidate`), and after
``ttl_s`` seconds at most (an edit in another process). PostgreSQL stays the
store; nothing here is durable.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import asyncpg
import faiss
import numpy as np

from memory.vectors import unit_rows, vec

DIM = 384


@dataclass(frozen=True)
class AssociativeConfig:
    sparse: bool = True  # k-WTA keys (off: the dense keys themselves)
    hopfield: bool = True  # complete the query over its nearest patterns first
    width: int = 1024  # the sparse code's dimension
    winners: int = 48  # active units per code (k of k-WTA): about 5 %
    hopfield_beta: float = 8.0  # inverse temperature of the attention over stored patterns
    hopfield_patterns: int = 32  # the query is completed over this many nearest patterns
    hopfield_steps: int = 1
    hopfield_mix: float = 0.5  # the completed pattern's share in the searched key
    max_episodes: int = 50_000  # a larger scope is not cached (4 KB a key; the other lists still search it)
    hnsw_above: int = 20_000  # exact inner product below this many episodes, FAISS HNSW above
    ttl_s: float = 60.0
    seed: int = 1234


@dataclass
class _ScopeCache:
    count: int
    newest: int
    built: float
    ids: np.ndarray  # episode message ids (the anchor of each episode), row order
    visible: list[str | None]
    dense: np.ndarray  # (n, 384), unit rows
    index: faiss.Index
    positions: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AssociativeHit:
    message_id: int  # the episode's anchor message
    score: float


class AssociativeIndex:
    def __init__(self, pool: asyncpg.Pool, config: AssociativeConfig | None = None) -> None:
        self.pool = pool
        self.config = config or AssociativeConfig()
        rng = np.random.default_rng(self.config.seed)
        # A fixed Gaussian projection: similar keys share most of their winners.
        self._projection = (rng.standard_normal((DIM, self.config.width)) / np.sqrt(DIM)).astype(np.float32)
        self._caches: dict[str, _ScopeCache] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # --- codes ------------------------------------------------------------------------------------------

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        """Unit-norm keys: k-WTA sparse codes of the projected vectors (or the vectors, with sparsity off)."""
        x = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if not self.config.sparse:
            return unit_rows(x)
        h = x @ self._projection
        k = min(self.config.winners, h.shape[1])
        winners = np.argpartition(-h, k - 1, axis=1)[:, :k]
        out = np.zeros_like(h)
        rows = np.arange(h.shape[0])[:, None]
        out[rows, winners] = np.maximum(h[rows, winners], 0.0)
        return unit_rows(out)

    def complete(self, query: np.ndarray, dense: np.ndarray) -> np.ndarray:
        """Modern-Hopfield completion of ``query`` over the stored patterns ``dense`` (unit rows)."""
        cfg = self.config
        q = unit_rows(np.asarray(query, dtype=np.float32)[None, :])[0]
        if dense.shape[0] == 0:
            return q
        sims = dense @ q
        m = min(cfg.hopfield_patterns, dense.shape[0])
        near = np.argpartition(-sims, m - 1)[:m]
        patterns = dense[near]
        xi = q
        for _ in range(cfg.hopfield_steps):
            logits = cfg.hopfield_beta * (patterns @ xi)
            weights = np.exp(logits - logits.max())
            xi = unit_rows(((weights / weights.sum()) @ patterns)[None, :])[0]
        return unit_rows(((1.0 - cfg.hopfield_mix) * q + cfg.hopfield_mix * xi)[None, :])[0]

    # --- search -----------------------------------------------------------------------------------------

    async def search(
        self, scope: str, vector: np.ndarray, k: int, *, visible_channel: str | None = None
    ) -> list[AssociativeHit]:
        """The ``k`` best episodes of ``scope`` the audience may see (visible everywhere, or in its channel)."""
        cache = await self._cache(scope)
        if cache is None or not len(cache.ids):
            return []
        q = self.complete(vector, cache.dense) if self.config.hopfield else np.asarray(vector, dtype=np.float32)
        key = self.encode(q)
        fetch = min(len(cache.ids), max(k * 4, k + 32))
        while True:
            scores, rows = cache.index.search(key, fetch)
            hits = [
                AssociativeHit(int(cache.ids[r]), float(s))
                for s, r in zip(scores[0], rows[0])
                if r >= 0 and cache.visible[r] in (None, visible_channel)
            ]
            if len(hits) >= k or fetch >= len(cache.ids):
                return hits[:k]
            fetch = min(len(cache.ids), fetch * 4)

    def invalidate(self, scope: str | None = None) -> None:
        """Drop a scope's cache (every scope's with None): the next search rebuilds it from PostgreSQL."""
        if scope is None:
            self._caches.clear()
        else:
            self._caches.pop(scope, None)

    async def _cache(self, scope: str) -> _ScopeCache | None:
        row = await self.pool.fetchrow(
            "SELECT count(*) AS n, coalesce(max(id), 0) AS newest FROM episodes WHERE scope = $1", scope
        )
        n, newest = int(row["n"]), int(row["newest"])
        if n > self.config.max_episodes:
            return None
        cache = self._caches.get(scope)
        if (
            cache is not None
            and (cache.count, cache.newest) == (n, newest)
            and time.monotonic() - cache.built < self.config.ttl_s
        ):
            return cache
        lock = self._locks.setdefault(scope, asyncio.Lock())
        async with lock:
            cache = self._caches.get(scope)
            if (
                cache is not None
                and (cache.count, cache.newest) == (n, newest)
                and time.monotonic() - cache.built < self.config.ttl_s
            ):
                return cache
            rows = await self.pool.fetch(
                "SELECT message_id, visible_in, embedding FROM episodes WHERE scope = $1 ORDER BY id", scope
            )
            ids = np.array([r["message_id"] for r in rows], dtype=np.int64)
            dense = unit_rows(np.array([vec(r["embedding"]) for r in rows], dtype=np.float32).reshape(-1, DIM))
            cache = await asyncio.to_thread(self._build, ids, [r["visible_in"] for r in rows], dense, n, newest)
            self._caches[scope] = cache
            return cache

    def _build(self, ids: np.ndarray, visible: list[str | None], dense: np.ndarray, n: int, newest: int) -> _ScopeCache:
        keys = self.encode(dense) if len(dense) else np.zeros((0, self._width()), dtype=np.float32)
        index: faiss.Index
        if len(keys) > self.config.hnsw_above:
            index = faiss.IndexHNSWFlat(keys.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = 128
        else:
            index = faiss.IndexFlatIP(keys.shape[1])
        if len(keys):
            index.add(np.ascontiguousarray(keys))
        return _ScopeCache(n, newest, time.monotonic(), ids, visible, dense, index)

    def _width(self) -> int:
        return self.config.width if self.config.sparse else DIM
