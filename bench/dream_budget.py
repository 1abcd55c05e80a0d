"""How long a dream cycle takes, step by step, against how much new work it has and how big the store is.

    python -m bench.dream_budget                          # 2,500 / 5,000 / 10,000 new, then 2,500 new on 20,000 old
    python -m bench.dream_budget --new 10000 --old 0

Each case is a fresh database (embedded PostgreSQL unless --database-url) holding ``old`` episodes
from months ago (their messages already absorbed, replayed and classified before the lookback
window) and ``new`` episodes from the last days: one message each, of realistic chat statements
(bench/pipeline.py's generator, embedded by MiniLM plus noise: a fifth with so little that they
are near-verbatim repeats, the merge step's work), 70 % in the scope under test and the rest spread over 30 others, each classified
by the real archetype router (a low-similarity share gives the archetype analysis clusters to
work on). Then the real App runs one dream cycle (no distillation: none exists yet) and the table
gives each step's seconds, the whole cycle's, and the cycle's seconds per 1,000 new episodes: a
cost that grows with new work stays flat per 1,000 as ``new`` grows, and one that does not grow
with the store stays the same with ``old`` added.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pipeline import NAMES, SCOPE, statements  # noqa: E402
from bot.config import Settings, offline_environment  # noqa: E402

NOW = datetime(2026, 9, 1, 3, 0, tzinfo=UTC)


async def fill(dsn: str, embedder, router, *, new: int, old: int, seed: int) -> None:
    import asyncpg
    from pgvector.asyncpg import register_vector

    rng = random.Random(seed)
    texts = statements(rng, 1500)
    base = await embedder.embed_many(texts)
    np_rng = np.random.default_rng(seed)
    total = new + old
    picks = np_rng.integers(0, len(texts), size=total)
    # a fifth are near-verbatim repeats (tiny noise: the merge step's work), the rest paraphrase-like
    scale = np.where(np_rng.random(total) < 0.2, 0.003, 0.02).astype(np.float32)[:, None]
    vectors = base[picks] + scale * np_rng.normal(0.0, 1.0, size=(total, base.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    msg_rows, ep_rows, match_rows = [], [], []
    for i in range(total):
        is_new = i >= old
        at = (
            NOW - timedelta(days=3) + timedelta(seconds=(i - old) * 20)
            if is_new
            else NOW - timedelta(days=200) + timedelta(seconds=i * 60)
        )
        scope = SCOPE if rng.random() < 0.7 else f"other-{rng.randrange(30)}"
        author = rng.choice(NAMES)
        text = texts[picks[i]]
        msg_rows.append((i + 1, scope, "import", f"s{i}", f"chan-{i % 7}", author.lower(), author, False, text, at, at))
        ep_rows.append(
            (
                scope,
                f"chan-{i % 7}",
                author.lower(),
                i + 1,
                f"{author}: {text}",
                vectors[i],
                0.5,
                at,
                at if is_new else NOW - timedelta(days=2),
            )
        )
        plan = router.classify(vectors[i], scope)
        match_rows.append((scope, i + 1, plan.archetype_id, float(plan.similarity), plan.archetype is None, at))
    conn = await asyncpg.connect(dsn)
    await register_vector(conn)
    try:
        await conn.copy_records_to_table(
            "messages",
            records=msg_rows,
            columns=[
                "id",
                "scope",
                "source",
                "external_id",
                "channel_id",
                "author_id",
                "author_name",
                "is_bot",
                "content",
                "created_at",
                "absorbed_at",
            ],
        )
        await conn.execute("SELECT setval('messages_id_seq', $1)", total + 1)
        await conn.copy_records_to_table(
            "episodes",
            records=ep_rows,
            columns=[
                "scope",
                "channel_id",
                "author_id",
                "message_id",
                "content",
                "embedding",
                "salience",
                "created_at",
                "last_reinforced_at",
            ],
        )
        await conn.copy_records_to_table(
            "archetype_matches",
            records=match_rows,
            columns=["scope", "message_id", "archetype_id", "similarity", "used_default", "matched_at"],
        )
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


async def run_case(admin_url: str, embedder, *, new: int, old: int) -> dict[str, Any]:
    import asyncpg

    from bot.app import App
    from memory.db import migrate, with_database
    from tests.fakes import ScriptedLLM

    name = "dream_" + uuid.uuid4().hex[:8]
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f"CREATE DATABASE {name}")
    await admin.close()
    dsn = with_database(admin_url, name)
    await migrate(dsn)
    settings = Settings(_env_file=None, database_url=dsn, data_dir=Path(tempfile.mkdtemp()))
    app = await App.open(settings, with_llm=True, llm=ScriptedLLM(delay=0.0), embedder=embedder)
    app.llm = None
    try:
        started = time.perf_counter()
        await fill(dsn, embedder, app.router, new=new, old=old, seed=new + old)
        print(f"  filled {old:,} old + {new:,} new in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        started = time.perf_counter()
        report = await app.dream.run(NOW)
        total = time.perf_counter() - started
        steps = {k: round(v.seconds, 2) for k, v in report.steps.items()}
        errors = {k: v.error for k, v in report.steps.items() if v.error}
        return {
            "new": new,
            "old": old,
            "total_s": round(total, 2),
            "per_1000_new_s": round(1000 * total / new, 2),
            "steps_s": steps,
            "errors": errors,
            "counts": {k: v.counts for k, v in report.steps.items() if v.counts},
        }
    finally:
        await app.close()


def print_table(results: list[dict[str, Any]]) -> None:
    cols = [f"{r['new']:,} new / {r['old']:,} old" for r in results]
    width = max(24, *(len(c) + 2 for c in cols))
    print(f"{'step (seconds)':<30}" + "".join(f"{c:>{width}}" for c in cols))
    steps = list(results[0]["steps_s"])
    for step in steps:
        print(f"{step:<30}" + "".join(f"{r['steps_s'].get(step, 0.0):>{width}.2f}" for r in results))
    print(f"{'whole cycle':<30}" + "".join(f"{r['total_s']:>{width}.2f}" for r in results))
    print(f"{'per 1,000 new episodes':<30}" + "".join(f"{r['per_1000_new_s']:>{width}.2f}" for r in results))
    for step, key in (("episodic_decay", "merged"), ("episodic_replay", "replayed")):
        print(f"{step + ' ' + key:<30}" + "".join(f"{r['counts'].get(step, {}).get(key, 0):>{width}}" for r in results))
    for r in results:
        if r["errors"]:
            print(f"errors at {r['new']:,} new / {r['old']:,} old: {r['errors']}")


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--new", type=int, nargs="+", default=[2500, 5000, 10000])
    p.add_argument("--old", type=int, default=20000, help="also run the smallest --new on top of this many old ones")
    p.add_argument("--database-url", help="admin URL of a PostgreSQL with pgvector (default: embedded)")
    args = p.parse_args()
    offline_environment()
    from memory.db import EmbeddedPostgres
    from memory.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.load()
    server = None
    admin_url = args.database_url
    if admin_url is None:
        server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="hippobot-dream-")) / "pgdata")
        admin_url = server.start()
    cases = [(n, 0) for n in args.new] + ([(min(args.new), args.old)] if args.old else [])
    try:
        results = []
        for new, old in cases:
            print(f"case: {new:,} new, {old:,} old", file=sys.stderr)
            results.append(await run_case(admin_url, embedder, new=new, old=old))
    finally:
        if server is not None:
            server.stop()
    print_table(results)


if __name__ == "__main__":
    asyncio.run(main())
