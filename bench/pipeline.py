"""Per-stage latency of the Brain's pipeline against M stored episodes.

    python bench/pipeline.py                       # M = 10,000 and 100,000, N = 20, real Gemma
    python bench/pipeline.py --episodes 10000 --messages 50 --no-llm
    python bench/pipeline.py --json bench/results/pipeline.json
    python bench/pipeline.py --episodes 10000 --engines llamacpp,bare   # fewer engines side by side

The replies go through the default engine (bot.engines: llama.cpp for the bundled model). After the
pipeline table, the engines are compared side by side on the same prompts (bench/engines.py: time to
first token on ~60- and ~600-token prompts, decode tokens/s, and perplexity and greedy agreement
against the bf16 transformers reference).

For each M it builds a fresh database (embedded PostgreSQL unless
--database-url), fills it with M synthetic but realistic episodes, then sends
N chat messages (after --warmup others, not timed: the first query of
each kind meets cold caches) through the real Brain (real MiniLM, real archetype router,
real pgvector recall, real prompt assembly, and the real bundled Gemma unless
--no-llm) and prints p50 / p95 of every stage (each message's embedding and
parse are never served from a cache; first_token_mem is the time to the first
token of the replies whose prompt held a recalled memory), plus recall@k of the HNSW
search against an exact scan. The filtered case asks for the top 10 of a
small scope (about 1 % of the table) three ways: the HNSW index alone (no
B-tree on the filter) with pgvector 0.8's iterative scans on (as the pool
sets them) and off, and the exact path (B-tree on scope, then a sort): rows
returned, recall@10 against an exact scan, and latency.

Synthetic episodes: 1,500 distinct chat statements are generated from
templates (people, pets, places, hobbies, jobs, plans, opinions) and embedded
with MiniLM; each episode takes one statement's vector plus small Gaussian
noise (mean cosine ~0.93 to its statement), so the store has the clustered
structure of real chat (many near-paraphrases) without embedding 100,000
texts. 70 % of episodes belong to the scope under test, the rest to 30 others.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engines import ENGINES, print_engines, run_engines  # noqa: E402
from bench.evallib import write_json  # noqa: E402
from bot.config import Settings, offline_environment  # noqa: E402

SCOPE = "bench-guild"
NAMES = ["Ana", "Ben", "Chloe", "Dev", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jules", "Kemal", "Lena"]
PETS = ["a cat called Miso", "a dog named Rex", "two rabbits", "a parrot called Kiwi", "a goldfish", "a tortoise"]
PLACES = ["Lisbon", "Porto", "Berlin", "Kyoto", "Toronto", "Nairobi", "Oslo", "Lima", "Seoul", "Dublin"]
HOBBIES = [
    "climbing",
    "baking sourdough",
    "playing the cello",
    "chess",
    "running marathons",
    "knitting",
    "birdwatching",
    "photography",
    "gardening",
    "surfing",
    "painting",
    "board games",
]
JOBS = ["a nurse", "a software engineer", "a teacher", "an architect", "a chef", "a bus driver", "a lawyer"]
TEMPLATES = [
    "I have {pet}",
    "My sister lives in {place}",
    "I just moved to {place}",
    "I've been getting into {hobby}",
    "I work as {job}",
    "My brother is {job} in {place}",
    "We're going to {place} next month",
    "I really don't like {hobby}",
    "{name} taught me {hobby} last year",
    "{name} and I went to {place}",
    "My favourite weekend is spent {hobby}",
    "I'm thinking of quitting my job as {job}",
    "{name} adopted {pet}",
    "I grew up in {place}",
    "I want to try {hobby} this summer",
]
MESSAGES = [
    "do you remember where my sister lives?",
    "what hobbies have I told you about?",
    "thanks!",
    "I'm getting an error when I run my script",
    "how do tides work?",
    "ok cool",
    "what pets do I have?",
    "remind me what I said about moving",
    "can you explain how vaccines work?",
    "what do I like doing on weekends?",
    "my code throws a KeyError on line 3",
    "I'm planning a trip to Kyoto, any tips?",
    "what's my job again?",
    "sounds good",
    "who taught me chess?",
    "tell me something about Lisbon",
    "did I mention a parrot?",
    "what kind of music do I like?",
    "why is the sky blue?",
    "what did we talk about yesterday?",
]
WARMUP = ["good morning everyone", "I had pasta for lunch today", "is anyone around?"]


WHEN = ["", " last week", " yesterday", " a few years ago", " this spring", ", honestly", " again", " lol"]


def statements(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct statements (the template space holds about 4,000)."""
    out: set[str] = set()
    while len(out) < n:
        out.add(
            rng.choice(TEMPLATES).format(
                pet=rng.choice(PETS),
                place=rng.choice(PLACES),
                hobby=rng.choice(HOBBIES),
                job=rng.choice(JOBS),
                name=rng.choice(NAMES),
            )
            + rng.choice(WHEN)
        )
    return sorted(out)


def pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def pct_ms(seconds: Sequence[float], q: float) -> float | None:
    p = pct(seconds, q)
    return None if p is None else p * 1000


async def fill(dsn: str, m: int, embedder, rng: random.Random) -> None:
    import asyncpg
    from pgvector.asyncpg import register_vector

    texts = statements(rng, 1500)
    base = await embedder.embed_many(texts)
    np_rng = np.random.default_rng(rng.randrange(2**32))
    conn = await asyncpg.connect(dsn)
    await register_vector(conn)
    try:
        await conn.execute("DROP INDEX episodes_embedding_idx")
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        scopes = [SCOPE if rng.random() < 0.7 else f"other-{rng.randrange(30)}" for _ in range(m)]
        picks = np_rng.integers(0, len(texts), size=m)
        noise = np_rng.normal(0.0, 0.02, size=(m, base.shape[1])).astype(np.float32)
        vectors = base[picks] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        msg_rows, ep_rows = [], []
        for i in range(m):
            at = t0 + timedelta(minutes=i)
            author = rng.choice(NAMES)
            text = texts[picks[i]]
            msg_rows.append(
                (i + 1, scopes[i], "import", f"s{i}", f"chan-{i % 7}", author.lower(), author, False, text, at)
            )
            ep_rows.append(
                (scopes[i], f"chan-{i % 7}", author.lower(), i + 1, f"{author}: {text}", vectors[i], 0.5, at, at)
            )
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
            ],
        )
        await conn.execute("SELECT setval('messages_id_seq', $1)", m + 1)
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
        started = time.perf_counter()
        await conn.execute("SET maintenance_work_mem = '1GB'")
        await conn.execute("CREATE INDEX episodes_embedding_idx ON episodes USING hnsw (embedding vector_cosine_ops)")
        await conn.execute("ANALYZE")
        print(f"  loaded {m:,} episodes, HNSW built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    finally:
        await conn.close()


async def exact_top(pool, vector: np.ndarray, k: int, scope: str = SCOPE) -> list[tuple[int, float]]:
    """The true top-k (id, similarity) of the scope, by a sequential scan."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_indexscan = off")
        await conn.execute("SET LOCAL enable_bitmapscan = off")
        rows = await conn.fetch(
            "SELECT id, 1 - (embedding <=> $2) / 2 AS s FROM episodes WHERE scope = $1 ORDER BY embedding <=> $2 LIMIT $3",
            scope,
            vector,
            k,
        )
    return [(r["id"], float(r["s"])) for r in rows]


SMALL_SCOPE = "other-0"  # about 1 % of the table
# "scope || ''": no B-tree can serve the filter, so the plan is the HNSW scan plus a filter (what a
# large scope or a visibility filter gets); relaxed_order results are re-sorted, as pgvector advises.
FILTERED_HNSW = """WITH hits AS MATERIALIZED (
                       SELECT id, 1 - (embedding <=> $2) / 2 AS s FROM episodes
                       WHERE scope || '' = $1 ORDER BY embedding <=> $2 LIMIT $3)
                   SELECT id, s FROM hits ORDER BY s DESC"""
# The exact path for a filter that leaves few rows: the B-tree on scope, then a sort ("+ 0": no vector index).
FILTERED_EXACT = """SELECT id, 1 - (embedding <=> $2) / 2 AS s FROM episodes
                    WHERE scope = $1 ORDER BY (embedding <=> $2) + 0 LIMIT $3"""


async def filtered_top(
    pool, scope: str, vector: np.ndarray, k: int, *, mode: str, iterative_off: bool = False
) -> tuple[list[int], float]:
    """Ids of a scope's top-k by ``mode`` ("exact", or the HNSW index with a filter it cannot use), and seconds."""
    async with pool.acquire() as conn, conn.transaction():
        if mode != "exact":
            await conn.execute("SET LOCAL enable_seqscan = off")
        if iterative_off:
            await conn.execute("SET LOCAL hnsw.iterative_scan = off")
        started = time.perf_counter()
        rows = await conn.fetch(FILTERED_EXACT if mode == "exact" else FILTERED_HNSW, scope, vector, k)
        took = time.perf_counter() - started
    return [r["id"] for r in rows], took


async def run_one(m: int, args: argparse.Namespace, admin_url: str, embedder, llm) -> dict[str, Any]:
    import asyncpg

    from bot.app import App
    from bot.brain import IncomingTurn
    from tests.fakes import ScriptedLLM

    name = "bench_" + uuid.uuid4().hex[:8]
    admin = await asyncpg.connect(admin_url)
    await admin.execute(f"CREATE DATABASE {name}")
    await admin.close()
    from memory.db import migrate, with_database
    from memory.layers.facts import FactsLayer

    dsn = with_database(admin_url, name)
    await migrate(dsn)
    rng = random.Random(m)
    await fill(dsn, m, embedder, rng)
    settings = Settings(_env_file=None, database_url=dsn, data_dir=Path(tempfile.mkdtemp()), max_new_tokens=args.tokens)
    app = await App.open(settings, with_llm=True, llm=llm or ScriptedLLM(delay=0.0), embedder=embedder)
    app.llm = None  # shared across runs; closed by main
    app_iterative = app.db.iterative_scans
    small_rows = await app.db.pool.fetchval("SELECT count(*) FROM episodes WHERE scope = $1", SMALL_SCOPE)
    stages: dict[str, list[float]] = {
        k: []
        for k in ["embed", "classify", "embed+classify", "recall", "prompt", "first_token", "first_token_mem", "write"]
    }
    tps: list[float] = []
    prompt_tokens: list[int] = []
    reused_tokens: list[int] = []  # of each prompt, already in the engine's KV cache (a conversation's prefix)
    for text in WARMUP[: args.warmup]:  # first queries of each kind, cold pages: not what a running bot sees
        reply = await app.brain.respond(IncomingTurn(SCOPE, "console", "bench-channel", "u-bench", "Ana", text))
        await reply.complete()
        await app.brain.drain()
    facts = next((x for x in app.brain.recall.layers if isinstance(x, FactsLayer)), None)
    layer_s: dict[str, list[float]] = {}  # each layer's recall (they run at once: CPU they wait for included)
    for layer in app.brain.recall.layers:

        def timed(query, original=layer.recall, name=layer.name):
            async def run():
                started = time.perf_counter()
                try:
                    return await original(query)
                finally:
                    layer_s.setdefault(name, []).append(time.perf_counter() - started)

            return run()

        setattr(layer, "recall", timed)  # noqa: B010  (instrumenting the instance: mypy refuses assigning a method)
    hits = total = 0
    gaps: list[float] = []
    # the filtered case, per mode: rows returned, hits against the exact top 10, query seconds
    filtered: dict[str, dict[str, Any]] = {
        mode: {"rows": 0, "hits": 0, "total": 0, "seconds": []} for mode in ("iterative", "plain", "exact")
    }
    try:
        for i in range(args.messages):
            text = MESSAGES[i % len(MESSAGES)]
            if hasattr(app.embedder, "clear_cache"):
                app.embedder.clear_cache()  # the messages repeat: time their embedding every time
            if facts is not None:
                facts.semantic.extractor.clear_cache()  # and their parse
            reply = await app.brain.respond(IncomingTurn(SCOPE, "console", "bench-channel", "u-bench", "Ana", text))
            await reply.complete()
            await app.brain.drain()
            t = reply.trace
            stages["embed"].append(t.embed_s)
            stages["classify"].append(t.classify_s)
            stages["embed+classify"].append(t.embed_s + t.classify_s)
            stages["recall"].append(t.recall_s)
            stages["prompt"].append(t.prompt_s)
            if t.first_token_s is not None and llm is not None:
                stages["first_token"].append(t.first_token_s)
                if reply.memories_in_prompt():  # a memory-backed reply (issue 33.3's goal: p50 <= 1 s)
                    stages["first_token_mem"].append(t.first_token_s)
                prompt_tokens.append(t.prompt_tokens)
                reused_tokens.append(t.reused_tokens)
            if t.tokens_per_s:
                tps.append(t.tokens_per_s)
            if t.write_s is not None:
                stages["write"].append(t.write_s)
            # recall quality of the index vs an exact scan, k = 10
            vector = (await app.embedder.embed_many([text]))[0]
            approx = await app.episodes.search(SCOPE, vector, 10)
            exact = await exact_top(app.db.pool, vector, 10)
            hits += len({h.episode.id for h in approx} & {i for i, _ in exact})
            total += len(exact)
            # near-duplicates make ids a harsh test: also compare the similarities found
            if approx and exact:
                gaps.append(statistics.fmean(s for _, s in exact) - statistics.fmean(h.similarity for h in approx))
            exact_small = {i for i, _ in await exact_top(app.db.pool, vector, 10, SMALL_SCOPE)}
            for mode, f in filtered.items():
                if mode == "iterative" and not app_iterative:
                    continue  # pgvector < 0.8: there is only the plain scan
                ids, took = await filtered_top(
                    app.db.pool, SMALL_SCOPE, vector, 10, mode=mode, iterative_off=mode == "plain" and app_iterative
                )
                f["rows"] += len(ids)
                f["hits"] += len(set(ids) & exact_small)
                f["total"] += len(exact_small)
                f["seconds"].append(took)
    finally:
        await app.close()
        admin = await asyncpg.connect(admin_url)
        await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
        await admin.close()
    result: dict[str, Any] = {
        "episodes": m,
        "messages": args.messages,
        "stages_ms": {
            k: {"p50": pct_ms(v, 50), "p95": pct_ms(v, 95), "n": len(v)} if v else {"n": 0} for k, v in stages.items()
        },
        "layers_ms": {k: {"p50": pct_ms(v, 50), "p95": pct_ms(v, 95), "n": len(v)} for k, v in sorted(layer_s.items())},
        "tokens_per_s": {"p50": pct(tps, 50), "p95": pct(tps, 95), "n": len(tps)} if tps else None,
        "prompt_tokens": {
            "p50": pct(prompt_tokens, 50),
            "p95": pct(prompt_tokens, 95),
            "reused_p50": pct(reused_tokens, 50),
            "reused_p95": pct(reused_tokens, 95),
            "reused_share": sum(reused_tokens) / max(1, sum(prompt_tokens)),
        }
        if prompt_tokens
        else None,
        "hnsw_recall_at_10": hits / total if total else None,
        "hnsw_mean_similarity_gap_at_10": statistics.fmean(gaps) if gaps else None,
        "iterative_scans": app_iterative,
        "filtered": {
            "scope_rows": small_rows,
            **{
                mode: {
                    "mean_rows": f["rows"] / len(f["seconds"]),
                    "recall_at_10": f["hits"] / f["total"] if f["total"] else None,
                    "p50_ms": pct_ms(f["seconds"], 50),
                    "p95_ms": pct_ms(f["seconds"], 95),
                }
                if f["seconds"]
                else None
                for mode, f in filtered.items()
            },
        },
    }
    return result


def print_table(results: list[dict[str, Any]]) -> None:
    header = f"{'stage':<16}" + "".join(f"{'M=' + format(r['episodes'], ','):>24}" for r in results)
    print(header)
    print(f"{'':<16}" + "".join(f"{'p50 ms':>12}{'p95 ms':>12}" for _ in results))
    for stage in results[0]["stages_ms"]:
        row = f"{stage:<16}"
        for r in results:
            s = r["stages_ms"][stage]
            row += f"{s['p50']:>12.1f}{s['p95']:>12.1f}" if s["n"] else f"{'-':>12}{'-':>12}"
        print(row)
    for name in results[0].get("layers_ms", {}):
        row = f"{'  ' + name:<16}"
        for r in results:
            s = r["layers_ms"].get(name, {"n": 0})
            row += f"{s['p50']:>12.1f}{s['p95']:>12.1f}" if s["n"] else f"{'-':>12}{'-':>12}"
        print(row)
    row = f"{'tokens/s':<16}"
    for r in results:
        t = r["tokens_per_s"]
        row += f"{t['p50']:>12.1f}{t['p95']:>12.1f}" if t else f"{'-':>12}{'-':>12}"
    print(row)
    for key, label in (("p", "prompt tokens"), ("reused", "  reused")):
        row = f"{label:<16}"
        for r in results:
            t = r.get("prompt_tokens")
            if t:
                lo, hi = (t["p50"], t["p95"]) if key == "p" else (t["reused_p50"], t["reused_p95"])
                row += f"{lo:>12.0f}{hi:>12.0f}"
            else:
                row += f"{'-':>12}{'-':>12}"
        print(row)
    print(f"{'hnsw recall@10':<16}" + "".join(f"{r['hnsw_recall_at_10']:>24.3f}" for r in results))
    print(f"{'hnsw sim gap@10':<16}" + "".join(f"{r['hnsw_mean_similarity_gap_at_10']:>24.4f}" for r in results))
    print("filtered: top 10 of a small scope: HNSW alone with iterative scans on / off, and B-tree + exact sort")
    print(f"{'scope rows':<16}" + "".join(f"{r['filtered']['scope_rows']:>24,}" for r in results))
    for mode in ("iterative", "plain", "exact"):
        rows = [r["filtered"][mode] for r in results]
        print(f"{mode + ' rows':<16}" + "".join(f"{f['mean_rows']:>24.1f}" if f else f"{'-':>24}" for f in rows))
        print(
            f"{mode + ' rec@10':<16}"
            + "".join(
                f"{f['recall_at_10']:>24.3f}" if f and f["recall_at_10"] is not None else f"{'-':>24}" for f in rows
            )
        )
        print(
            f"{mode + ' p50/p95 ms':<16}"
            + "".join(f"{f['p50_ms']:>12.1f}{f['p95_ms']:>12.1f}" if f else f"{'-':>24}" for f in rows)
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3, help="messages sent first and not timed (at most 3)")
    parser.add_argument("--tokens", type=int, default=32, help="max new tokens per reply")
    parser.add_argument("--no-llm", action="store_true", help="skip the real model (no TTFT / tokens/s)")
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL with pgvector (default: embedded)")
    parser.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help="engines to compare side by side after the pipeline (bench/engines.py); '' for none",
    )
    parser.add_argument("--engine-repeats", type=int, default=3, help="prompts of each length per engine")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    offline_environment()

    from bot.app import engine_config
    from bot.engines import load_engine
    from memory.db import EmbeddedPostgres
    from memory.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.load()
    llm = None
    if not args.no_llm:
        settings = Settings(_env_file=None, max_new_tokens=args.tokens)
        llm = load_engine(settings, engine_config(settings))  # the default engine
        print(f"engine: {llm.name}", file=sys.stderr)
    server = None
    admin_url = args.database_url
    if admin_url is None:
        server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="hippobot-bench-")) / "pgdata")
        admin_url = server.start()
    try:
        results = []
        for m in args.episodes:
            print(f"M = {m:,}", file=sys.stderr)
            results.append(await run_one(m, args, admin_url, embedder, llm))
    finally:
        if llm is not None:
            llm.close()
        if server is not None:
            server.stop()
    print_table(results)
    engines = None
    if not args.no_llm and args.engines:
        engines = await run_engines([e for e in args.engines.split(",") if e], repeats=args.engine_repeats)
        print_engines(engines)
    if args.json:
        write_json(args.json, {"pipeline": results, "engines": engines})
    print(json.dumps({"pipeline": results, "engines": engines}))


if __name__ == "__main__":
    asyncio.run(main())
