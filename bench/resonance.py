"""Resonant recall (issue 11): what the resonance layer costs per message, and what it changes in the replies.

    python bench/resonance.py                      # speed at 10,000 moments, then replies with the real Gemma
    python bench/resonance.py --no-llm             # speed only
    python bench/resonance.py --moments 10000 100000 --queries 300 --samples 3

Speed: a fresh database (embedded PostgreSQL unless --database-url) holds M
moments of synthetic but varied turns (templates over people, places,
hobbies, food, music, feelings), 80 % in the scope under test; N messages
are asked through the layer's recall (the part of the pipeline it adds
before generation; the Gemma tokenizer maps words to token ids) and through
its absorb (after the reply, off the critical path). p50 / p95 per message.

Replies (with the real bundled Gemma): 12 earlier turns are stored as
moments (a person's message and a distinctive reply of the bot's, rated up),
then a fixed set of prompts, each near one of them, is answered in a fresh
conversation under three conditions with the same seeds: resonance off, the
section only (observation bias), and the section with token boosts. For
each reply: does it reuse a word of its recalled moments that the prompt
does not contain, and its perplexity (exp of the mean surprise under the
unboosted model). Replies made during the run are not kept as moments.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.evallib import scratch_database, write_json  # noqa: E402
from bot.config import Settings, offline_environment  # noqa: E402

SCOPE = "bench-resonance"
NAMES = ["Ana", "Ben", "Chloe", "Dev", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jules"]
THINGS = [
    "sourdough",
    "the cello",
    "climbing",
    "chess",
    "marathons",
    "knitting",
    "birdwatching",
    "photography",
    "gardening",
    "surfing",
    "painting",
    "board games",
    "jazz records",
    "ramen",
    "tacos",
    "the accordion",
    "kayaking",
    "astronomy",
    "pottery",
    "poetry",
    "mangoes",
    "coffee",
    "tea",
    "origami",
    "football",
]
PLACES = ["Lisbon", "Porto", "Berlin", "Kyoto", "Toronto", "Nairobi", "Oslo", "Lima", "Seoul", "Dublin"]
FEELINGS = ["love", "miss", "can't stand", "am curious about", "keep thinking about", "adore", "fear"]
ASKS = [
    "What do you think about {t}?",
    "I {f} {t}!!",
    "Have you ever tried {t} in {p}?",
    "{n} says {t} is overrated",
    "Tell me something about {t}",
    "WOW, {t} in {p} was AMAZING 🎉",
    "why does {n} like {t} so much?",
    "any tips for {t}?",
]
REPLIES = [
    "{t} is wonderful, especially in {p} when the evenings get long",
    "I think {n} is right about {t}, it takes patience and a bit of luck",
    "Honestly {t} feels like a small festival every time, try it with friends",
    "The best {t} I remember came from a tiny place in {p}",
    "{t}? I could talk about it for hours, the rhythm of it is addictive",
]

# The reply experiment: earlier turns (a person's message, the bot's reply that went well) and prompts near them.
MOMENTS = [
    ("What did you get for Christmas?", "Santa brought me a shiny red accordion and I played carols all night"),
    ("Any fruit you love?", "Mangoes and papayas, ripe and sticky, straight from the market in Lisbon"),
    ("How was the hike?", "Misty pines, a cold waterfall, and a marmot whistling at us near the summit"),
    ("What are you reading?", "A battered paperback about lighthouse keepers, gulls and endless storms"),
    ("What did you cook?", "Saffron risotto with roasted fennel, lemon zest and far too much parmesan"),
    ("Favourite music?", "Old vinyl jazz, a trumpet solo crackling while rain taps the window"),
    ("How do you relax?", "Origami cranes, folded slowly, one crisp paper square after another"),
    ("Any pets?", "A grumpy tortoise named Biscuit who eats dandelions like a tiny emperor"),
    ("Where would you travel?", "Kyoto in autumn: maple leaves, temple bells and steaming bowls of ramen"),
    ("What sport do you like?", "Kayaking at dawn, paddles dipping, herons lifting off the glassy river"),
    ("Tell me about the sky", "Saturn's rings through a borrowed telescope, freezing fingers, pure wonder"),
    ("Best coffee?", "A tiny espresso bar with cardamom buns and a barista who hums opera"),
]
PROMPTS = [
    "Did Santa bring you anything fun, maybe an accordion?",
    "I bought mangoes at the market today, what should I do with them?",
    "Planning a hike to a waterfall this weekend, any thoughts?",
    "I'm looking for a book about lighthouses and storms",
    "What should I cook tonight, maybe risotto?",
    "Put on some jazz, it's raining here",
    "I want to learn origami, where do I start?",
    "My neighbour has a tortoise, are they good pets?",
    "Is Kyoto nice in autumn?",
    "Thinking about trying kayaking on the river",
    "Can you see Saturn with a telescope?",
    "Where can I find good espresso?",
]


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def turn_text(rng: random.Random, template: list[str]) -> str:
    return rng.choice(template).format(
        t=rng.choice(THINGS), p=rng.choice(PLACES), n=rng.choice(NAMES), f=rng.choice(FEELINGS)
    )


async def fill(pool, m: int, rng: random.Random, now: datetime) -> None:
    """M moments (each a person message and the bot's reply), 80 % in SCOPE, the rest in 20 other scopes."""
    from memory.resonance.features import arousal, reply_len_norm, themes, unique_ratio, words

    batch = 2000
    for start in range(0, m, batch):
        msgs, replies, meta = [], [], []
        for i in range(start, min(m, start + batch)):
            scope = SCOPE if rng.random() < 0.8 else f"other-{rng.randrange(20)}"
            ask, answer = turn_text(rng, ASKS), turn_text(rng, REPLIES)
            at = now - timedelta(minutes=m - i)
            visible = "mods" if rng.random() < 0.05 else None
            msgs.append((scope, "import", f"q{i}", "c1", f"u{rng.randrange(50)}", "someone", False, ask, at, visible))
            replies.append((scope, answer, at + timedelta(seconds=5), visible))
            meta.append(
                (
                    ask,
                    answer,
                    arousal(ask),
                    words(answer),
                    themes([ask, answer], None),
                    reply_len_norm(answer),
                    unique_ratio(answer),
                    rng.random(),
                )
            )
        async with pool.acquire() as conn, conn.transaction():
            ids = [
                r["id"]
                for r in await conn.fetch(
                    """INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name, is_bot,
                                         content, created_at, visible_in)
                   SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                                        $7::bool[], $8::text[], $9::timestamptz[], $10::text[])
                   RETURNING id""",
                    *map(list, zip(*msgs)),
                )
            ]
            rids = [
                r["id"]
                for r in await conn.fetch(
                    """INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name, is_bot,
                                         content, created_at, visible_in, derived_from_id)
                   SELECT s, 'import', 'r' || d::text, 'c1', 'bot', 'hippobot', true, c, t, v, d
                   FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::bigint[])
                        AS x(s, c, t, v, d)
                   RETURNING id""",
                    [r[0] for r in replies],
                    [r[1] for r in replies],
                    [r[2] for r in replies],
                    [r[3] for r in replies],
                    ids,
                )
            ]
            await conn.executemany(
                """INSERT INTO resonance_moments (message_id, reply_id, scope, visible_in, channel_id, words, themes,
                       surprise, entropy, novelty, arousal, reply_len_norm, unique_ratio, quality, created_at)
                   VALUES ($1, $2, $3, $4, 'c1', $5, $6, 2.5, 3.0, 0.5, $7, $8, $9, $10, $11)""",
                [
                    (mid, rid, msg[0], msg[9], mt[3], mt[4], mt[2], mt[5], mt[6], mt[7], msg[8])
                    for mid, rid, msg, mt in zip(ids, rids, msgs, meta)
                ],
            )


async def speed(m: int, args: argparse.Namespace, admin_url: str, mapper) -> dict[str, Any]:
    from memory.archetypes import ContextPlan
    from memory.conversation import StoredMessage
    from memory.db import create_pool, migrate
    from memory.layers.base import AbsorbedTurn
    from memory.layers.resonance import ResonanceLayer
    from memory.recall import recall_query

    scratch = contextlib.AsyncExitStack()  # a throwaway database, dropped at the end
    dsn = await scratch.enter_async_context(scratch_database(admin_url, "bench_res"))
    assert dsn is not None  # a server URL was given, so a database on it
    await migrate(dsn)
    pool = await create_pool(dsn)
    rng = random.Random(m)
    now = datetime.now(UTC)
    try:
        await fill(pool, m, rng, now)
        await pool.execute("ANALYZE")
        layer = ResonanceLayer(pool, mapper)
        await layer.ready()
        plan = ContextPlan(archetype=None, similarity=0.0, turns=8, vectors=5, similarity_threshold=0.5, triple_depth=1)
        vector = np.zeros(384, dtype=np.float32)
        recall_s, absorb_s, winners, boosted = [], [], [], []
        for i in range(args.queries + 10):
            text = turn_text(rng, ASKS)
            q = recall_query(SCOPE, text, vector, plan, now, channel_id="c9", visible_channel="c9")
            t0 = time.perf_counter()
            section = await layer.recall(q)
            t1 = time.perf_counter()
            if i >= 10:  # warm-up left out
                recall_s.append(t1 - t0)
                winners.append(len(section.items) if section else 0)
                boosted.append(len(section.boosts) if section else 0)
        # absorb: a new turn stored as a moment (after the reply; never delays it)
        for i in range(min(args.queries, 100)):
            ask, answer = turn_text(rng, ASKS), turn_text(rng, REPLIES)
            row = await pool.fetchrow(
                """WITH q AS (INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name,
                                                   content, created_at)
                              VALUES ($1, 'console', $2, 'c9', 'u1', 'ana', $3, $5) RETURNING id)
                   INSERT INTO messages (scope, source, external_id, channel_id, author_id, author_name, is_bot,
                                         content, created_at, derived_from_id)
                   SELECT $1, 'console', 'r' || $2, 'c9', 'bot', 'hippobot', true, $4, $5, id FROM q
                   RETURNING id, derived_from_id""",
                SCOPE,
                f"new{i}",
                ask,
                answer,
                now,
            )
            msg = StoredMessage(
                row["derived_from_id"], SCOPE, "console", f"new{i}", "c9", "u1", "ana", False, ask, None, now
            )
            reply = StoredMessage(
                row["id"], SCOPE, "console", f"rnew{i}", "c9", "bot", "hippobot", True, answer, msg.id, now
            )
            t0 = time.perf_counter()
            await layer.absorb(AbsorbedTurn(msg, reply, vector, plan, now, 2.5, {}, 3.0, 0.4))
            absorb_s.append(time.perf_counter() - t0)
        in_scope = await pool.fetchval("SELECT count(*) FROM resonance_moments WHERE scope = $1", SCOPE)
    finally:
        await pool.close()
        await scratch.aclose()

    def ms(values: list[float], q: float) -> float | None:
        s = pct(values, q)
        return None if s is None else s * 1000.0

    return {
        "moments": m,
        "in_scope": in_scope,
        "queries": len(recall_s),
        "recall_p50_ms": ms(recall_s, 0.5),
        "recall_p95_ms": ms(recall_s, 0.95),
        "absorb_p50_ms": ms(absorb_s, 0.5),
        "absorb_p95_ms": ms(absorb_s, 0.95),
        "mean_winners": statistics.fmean(winners),
        "mean_boosted_tokens": statistics.fmean(boosted),
    }


async def replies(args: argparse.Namespace, admin_url: str, llm, embedder) -> dict[str, Any]:
    from bot.app import App
    from bot.brain import IncomingTurn
    from memory.conversation import NewMessage
    from memory.db import migrate
    from memory.layers.resonance import ResonanceLayer
    from memory.resonance.features import words

    scratch = contextlib.AsyncExitStack()  # a throwaway database, dropped at the end
    dsn = await scratch.enter_async_context(scratch_database(admin_url, "bench_res"))
    assert dsn is not None  # a server URL was given, so a database on it
    await migrate(dsn)
    settings = Settings(_env_file=None, database_url=dsn, data_dir=Path(tempfile.mkdtemp()), max_new_tokens=args.tokens)
    app = await App.open(settings, with_llm=True, llm=llm, embedder=embedder)
    app.llm = None  # main closes the model
    layer = app.brain.layer("resonance")  # registered by App.open, on this engine's tokens
    assert isinstance(layer, ResonanceLayer), "HIPPOBOT_RESONANCE_ENABLED is off"
    await layer.ready()
    results: dict[str, dict[str, list[float]]] = {}
    try:
        start = datetime.now(UTC) - timedelta(days=3)
        for i, (ask, answer) in enumerate(MOMENTS):
            conv = app.conversations
            msg = await conv.add(
                NewMessage(SCOPE, "console", f"m{i}", "old", "u-ana", "ana", ask, start + timedelta(minutes=2 * i))
            )
            await conv.add(
                NewMessage(
                    SCOPE,
                    "console",
                    f"r{i}",
                    "old",
                    app.brain.bot_id,
                    settings.bot_name,
                    answer,
                    start + timedelta(minutes=2 * i, seconds=5),
                    is_bot=True,
                    derived_from_id=msg.id,
                )
            )
            await app.brain.absorber.absorb(msg.id)
        pool = app.db.pool
        await pool.execute("UPDATE resonance_moments SET created_at = created_at - interval '3 days', quality = 0.8")
        seeded = await pool.fetchval("SELECT max(id) FROM resonance_moments")
        conditions = {"off": None, "section only": False, "section + boosts": True}
        for cond, boosts in conditions.items():
            results[cond] = {"reuse": [], "reused_words": [], "perplexity": [], "entropy": []}
            if boosts is None:
                app.layers.remove(layer)
            for p, prompt in enumerate(PROMPTS):
                # what resonance recalls for this prompt (the same for every condition)
                bundle = await app.brain.context(prompt, SCOPE, channel_id=f"new-{p}")
                section = bundle.section("resonance") if boosts is not None else None
                if boosts is None:
                    layer_bundle = await layer.resonate(_query(app, prompt, p))
                    recalled = {w for s in (layer_bundle[0].winners if layer_bundle else ()) for w in s.candidate.words}
                else:
                    recalled = {w for item in (section.items if section else ()) for w in item.payload.candidate.words}
                fresh = recalled - set(words(prompt))
                layer.boosts_enabled = bool(boosts)
                for s in range(args.samples):
                    llm._config = _seeded(llm._config, 1000 + s)
                    r = await app.brain.respond(
                        IncomingTurn(SCOPE, "console", f"new-{p}-{cond}-{s}", "u-ben", "ben", prompt)
                    )
                    text = await r.complete()
                    await app.brain.drain()
                    reused = fresh & set(words(text))
                    results[cond]["reuse"].append(1.0 if reused else 0.0)
                    results[cond]["reused_words"].append(float(len(reused)))
                    stats = r._generation.stats
                    if stats.mean_surprise is not None:
                        results[cond]["perplexity"].append(math.exp(stats.mean_surprise))
                    if stats.mean_entropy is not None:
                        results[cond]["entropy"].append(stats.mean_entropy)
                    if args.verbose:
                        print(f"[{cond}] {prompt!r} -> {text!r} reused={sorted(reused)}", file=sys.stderr)
                    await pool.execute("DELETE FROM resonance_moments WHERE id > $1", seeded)
                    await pool.execute("UPDATE resonance_moments SET uses = 0, last_used_at = NULL")
            if boosts is None:
                app.layers.append(layer)
    finally:
        await app.close()
        await scratch.aclose()
    out: dict[str, Any] = {}
    for cond, res in results.items():
        out[cond] = {
            "replies": len(res["reuse"]),
            "reuse_share": statistics.fmean(res["reuse"]),
            "reused_words": statistics.fmean(res["reused_words"]),
            "perplexity": statistics.fmean(res["perplexity"]) if res["perplexity"] else None,
            "entropy": statistics.fmean(res["entropy"]) if res["entropy"] else None,
        }
    return out


def _query(app, text: str, p: int):
    from memory.recall import recall_query

    vector = np.zeros(384, dtype=np.float32)
    return recall_query(
        SCOPE,
        text,
        vector,
        app.router.classify(vector, SCOPE),
        datetime.now(UTC),
        channel_id=f"new-{p}",
        visible_channel=f"new-{p}",
    )


def _seeded(config, seed: int):
    from dataclasses import replace

    return replace(config, seed=seed)


def print_tables(speeds: list[dict[str, Any]], reply: dict[str, Any] | None) -> None:
    print("\nResonance layer, time per message (recall before generation; absorb after the reply)")
    print(
        f"{'moments':>9} {'in scope':>9} {'recall p50':>11} {'recall p95':>11} {'absorb p50':>11} "
        f"{'absorb p95':>11} {'winners':>8} {'boosted ids':>12}"
    )
    for s in speeds:
        print(
            f"{s['moments']:>9,} {s['in_scope']:>9,} {s['recall_p50_ms']:>9.2f}ms {s['recall_p95_ms']:>9.2f}ms "
            f"{s['absorb_p50_ms']:>9.2f}ms {s['absorb_p95_ms']:>9.2f}ms {s['mean_winners']:>8.1f} "
            f"{s['mean_boosted_tokens']:>12.1f}"
        )
    if reply is None:
        return
    base = reply["off"]["perplexity"]
    print("\nReplies on a fixed prompt set (the real Gemma, same seeds in every condition)")
    print(
        f"{'condition':<18} {'replies':>8} {'reuse share':>12} {'reused words':>13} {'perplexity':>11} "
        f"{'change':>8} {'entropy':>8}"
    )
    for cond, r in reply.items():
        ppl = r["perplexity"]
        change = f"{(ppl / base - 1) * 100:+.1f}%" if ppl and base else "-"
        print(
            f"{cond:<18} {r['replies']:>8} {r['reuse_share']:>12.2f} {r['reused_words']:>13.2f} "
            f"{ppl:>11.2f} {change:>8} {r['entropy'] or 0:>8.2f}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moments", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--samples", type=int, default=2, help="replies per prompt and condition (seeds)")
    parser.add_argument("--tokens", type=int, default=32, help="max new tokens per reply")
    parser.add_argument("--no-llm", action="store_true", help="speed only, with the Gemma tokenizer")
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL with pgvector (default: embedded)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--verbose", action="store_true", help="print every reply")
    args = parser.parse_args()
    offline_environment()

    from bot.app import engine_config
    from bot.llm import EngineConfig, TransformersLLM, ensure_bundled_model
    from memory.db import EmbeddedPostgres

    settings = Settings(_env_file=None, max_new_tokens=args.tokens)
    llm = None
    if args.no_llm:  # the engine's tokenizer alone maps words to ids
        from transformers import AutoTokenizer

        path = ensure_bundled_model(settings.model_cache_dir, progress=False)
        mapper = TransformersLLM(None, AutoTokenizer.from_pretrained(str(path)), EngineConfig(), "tokenizer only")
    else:
        llm = mapper = TransformersLLM.load(engine_config(settings, progress=False))
    server = None
    admin_url = args.database_url
    if admin_url is None:
        server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="hippobot-bench-")) / "pgdata")
        admin_url = server.start()
    speeds: list[dict[str, Any]] = []
    reply = None
    try:
        for m in args.moments:
            print(f"M = {m:,}", file=sys.stderr)
            speeds.append(await speed(m, args, admin_url, mapper))
        if llm is not None:
            from memory.embed import MiniLMEmbedder

            embedder = MiniLMEmbedder()
            embedder.load()
            reply = await replies(args, admin_url, llm, embedder)
    finally:
        mapper.close()
        if server is not None:
            server.stop()
    print_tables(speeds, reply)
    results = {"speed": speeds, "replies": reply}
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    asyncio.run(main())
