"""The dream's near-duplicate search (episodic merging) runs off the event loop too (issue 8, "What to build" 8:
"clustering, merging and any CPU work run in threads"). tests/test_dream.py watches the clustering and the
replay order only; moving this matrix product back onto the loop left it passing."""

from __future__ import annotations

import threading
from datetime import timedelta

import numpy as np
import pytest

import dream.replay as replay_module
from bot.app import App
from tests.dream_data import NOW


async def test_the_near_duplicate_search_runs_off_the_event_loop(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    pool = app.db.pool
    n = 2000
    rows = [("g1", "import", str(i), "c1", f"u{i % 7}", "x", f"message {i} {rng.integers(1e9)}",
             NOW - timedelta(days=1, minutes=i)) for i in range(n)]
    await pool.executemany(
        """INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name, content, created_at,
                                 absorbed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)""", rows)
    ids = [r["id"] for r in await pool.fetch("SELECT id FROM messages ORDER BY id")]
    vectors = rng.normal(size=(n, 384))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    vectors[1] = vectors[0]  # one near-duplicate pair, said in the same words: merged
    await pool.executemany(
        """INSERT INTO episodes (scope, channel_id, author_id, message_id, content, embedding, salience, created_at,
                                 last_reinforced_at) VALUES ('g1', 'c1', 'u', $1, $2, $3, 0.5, $4, $4)""",
        [(i, "ana: the same words" if k < 2 else f"ana: moment {k}", v, NOW - timedelta(days=1))
         for k, (i, v) in enumerate(zip(ids, vectors))])
    threads: list[bool] = []
    original = replay_module._nearest_exact

    def watched(*args, **kw):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread() is threading.main_thread())
        return original(*args, **kw)

    monkeypatch.setattr(replay_module, "_nearest_exact", watched)
    report = await replay_module.decay_and_merge(app.dream.services, NOW)
    assert report.counts["merged"] == 1
    assert threads and not any(threads), "the near-duplicate search ran on the loop's thread"
