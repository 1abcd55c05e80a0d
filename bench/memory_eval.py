"""Memory evaluation (issue 9, seed 001's teach -> test): import long chats, ask questions, score the recall.

    python bench/memory_eval.py                          # heldout split, hippobot + baselines
    python bench/memory_eval.py --split dev --k 20 --json bench/results/memory_dev.json
    python bench/memory_eval.py --split dev --conversations 2 --llm --llm-limit 40
    python bench/memory_eval.py --split dev --no-baselines --words-curve   # recall against words, per budget
    python bench/memory_eval.py --database-url postgresql://...  # a server whose user may create databases
    python bench/memory_eval.py --dream --months --split dev     # a server's months with a nightly dream

Teach: every conversation of the split (bench/data/memory_eval/, written by
bench/memory_data.py) is imported into its own scope (scope = conversation id)
through `hippobot import`'s code, App.importer.run, which returns when every
memory layer has absorbed the messages. The app runs on a throwaway database:
an embedded PostgreSQL in a temporary data directory, or a scratch database
created on --database-url and dropped afterwards.

Test: each question goes through `hippobot recall --queries`'s code,
App.brain.contexts([(question, scope)], k=K, author_id=...), one question a
call so that each has its own latency (the whole split is also asked in one
batched call, timed, to report the batched cost per query). Ranking rule:
the bundle's items in bundle.items() order (memory sections by priority, each
best first); the recent-turns transcript section is left out (it holds the
conversation's last turns whatever is asked, which is recency, not recall;
--with-transcript keeps it, after the memories). An item covers the import
ids of its sources (turns, episodes and graph facts alike); an evidence turn
is found at k when it is among the sources of the first k items. Each turn
id counts at its first rank only. An episode item's sources are exactly the
turns its text shows (the hit and the neighbours kept with it), so a turn
counts as found only when the words the model would read hold it.

Printed per category and overall: n, recall_any@k and recall_all@k for
k = 5, 10, 20, mean words in the top 10 items (of their text, speakers'
names included: what the word budget counts), p50/p95 latency per query.
--words-curve: recall and words at several word budgets of the episodes
layer, on the same imported data, to choose the budget from.
Adversarial questions have no evidence: their row shows the mean top-1 score
instead, and they are left out of the overall recall.

Baselines on the same questions, in-process (not through hippobot): MiniLM
over "speaker: text" of every turn (cosine), BM25 over the same strings, and
BM25 + MiniLM fused by reciprocal rank (k = 60, each list's top 100).

--llm: the bundled Gemma answers each of the first --llm-limit questions
(taken round-robin over categories) three ways, greedy: memory (`hippobot
ask`'s path, Brain.ask: the archetype's plan, every layer's recall, the
prompt as the bot builds it), core (the same prompt without memory) and
long-context (the conversation's most recent turns that fit the prompt
budget); with the reader adapter and without it (--reader on off, both by
default, on the same imported memory). EM and token F1 after SQuAD-style
normalisation (lower case, no punctuation, no articles), a lenient
'contains' (the gold answer inside the reply), ΔEM core -> memory,
memory_hit_rate (seed 001: the share of answerable questions whose prompt
held an evidence turn), the abstention rate on adversarial questions (the
reply says it does not know: `abstains`, a generic pattern), the share of
answerable questions answered rather than refused, and how often the sources
line of a right memory answer names an evidence turn. On adversarial
questions an abstaining reply counts as the right answer.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.evallib import (  # noqa: E402
    BM25,
    CATEGORIES,
    DATA_DIR,
    Question,
    Turn,
    contains_match,
    dedupe_ranked,
    exact_match,
    hits_at,
    load_conversation,
    load_questions_in,
    percentile,
    rrf,
    scratch_database,
    select,
    token_f1,
    words,
    write_json,
)
from bot.config import Settings, offline_environment  # noqa: E402

CUTOFFS = (5, 10, 20)
AUTHOR = "console:memeval"
ASKER = "asker"
RRF_K = 60
BASELINE_DEPTH = 100
WORDS_CURVE = (100, 150, 200, 250, 300, 350, 400, 450, 500, 600, 800)


@dataclass
class Answered:
    """One question's ranked result from one system."""

    question: Question
    ranked: list[tuple[str, ...]]  # per item, the import ids of its sources, best first
    words_top10: int
    top1: float | None
    latency_s: float | None = None
    bundle: object = field(default=None, repr=False)


# --- the app ------------------------------------------------------------------------------------------------


def ranked_items(bundle, *, with_transcript: bool) -> list:
    """The recalled memories in bundle.items() order; the preamble (the bot's persona) is no memory."""
    from memory.layers.base import MEMORY, TRANSCRIPT

    kept = (MEMORY, TRANSCRIPT) if with_transcript else (MEMORY,)
    return replace(bundle, sections=tuple(s for s in bundle.sections if s.placement in kept)).items()


def _answered(q: Question, items: list, latency: float | None, bundle: object) -> Answered:
    ranked: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for item in items:
        ids = tuple(s.external_id for s in item.sources if s.external_id not in seen)
        seen.update(ids)
        ranked.append(ids)
    top1 = next((i.score for i in items if i.score is not None), None)
    return Answered(q, ranked, sum(len(words(i.text)) for i in items[:10]), top1, latency, bundle)


async def run_hippobot(
    args: argparse.Namespace, questions: list[Question], convs: list[str], embedder, turns: dict[str, list[Turn]]
) -> dict:
    from bot.app import App

    async with scratch_database(args.database_url, "memeval") as url:
        settings = Settings(
            _env_file=None, data_dir=Path(tempfile.mkdtemp(prefix="hippobot-memeval-")), database_url=url
        )
        started = time.perf_counter()
        app = await App.open(settings, with_llm=False, embedder=embedder)
        out: dict = {"open_s": time.perf_counter() - started, "imports": {}}
        try:
            for conv in convs:
                t0 = time.perf_counter()
                report = await app.importer.run(args.data / f"{conv}.jsonl", conv)
                out["imports"][conv] = {
                    "seconds": time.perf_counter() - t0,
                    "report": str(report),
                    "imported": report.imported,
                }
                print(f"  imported {conv}: {report} in {out['imports'][conv]['seconds']:.1f} s", file=sys.stderr)
            out["answered"] = await ask(args, app, questions)
            if args.dream:
                out["dream"] = await run_dream(args, app, questions, convs)
            t0 = time.perf_counter()
            await app.brain.contexts([(q.question, q.conv) for q in questions], k=args.k, author_id=AUTHOR)
            out["batched_s"] = time.perf_counter() - t0
            out["writes"] = await writes_per_1k_words(app, convs)
            if args.ablation:
                out["ablation"] = await run_ablation(args, app, questions, convs)
            from memory.layers.episodes import EpisodesLayer

            episodes = app.brain.layer("episodes")
            out["word_budget"] = episodes.config.word_budget if isinstance(episodes, EpisodesLayer) else None
            if args.words_curve:
                out["words_curve"] = await run_words_curve(args, app, questions)
            if args.llm:
                out["llm"] = await run_llm(args, app, out["answered"], turns)
        finally:
            await app.close()
    return out


async def ask(args: argparse.Namespace, app, questions: list[Question], scope_of=lambda c: c) -> list[Answered]:
    """Each question through `recall --queries`'s code, one call each (so each has its own latency)."""
    out = []
    for q in questions:
        t0 = time.perf_counter()
        [bundle] = await app.brain.contexts([(q.question, scope_of(q.conv))], k=args.k, author_id=AUTHOR)
        out.append(
            _answered(q, ranked_items(bundle, with_transcript=args.with_transcript), time.perf_counter() - t0, bundle)
        )
    return out


async def writes_per_1k_words(app, scopes: Sequence[str]) -> dict[str, float]:
    """The write gate's rate: episodes written per 1,000 words of imported conversation."""
    pool = app.db.pool
    episodes = await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = ANY($1::text[])", list(scopes))
    n_words = await pool.fetchval(
        "SELECT coalesce(sum(array_length(regexp_split_to_array(trim(content), '\\s+'), 1)), 0) FROM messages "
        "WHERE scope = ANY($1::text[])",
        list(scopes),
    )
    return {"episodes": episodes, "words": n_words, "per_1k_words": 1000.0 * episodes / max(n_words, 1)}


async def run_ablation(args: argparse.Namespace, app, questions: list[Question], convs: list[str]) -> dict:
    """HEI-NW's parts and the hybrid lists, each switched off alone, on the same imported data (the gate:
    the split imported again under a threshold tau, into scopes of its own)."""
    from dataclasses import replace as _replace

    from memory.associative import AssociativeIndex
    from memory.episodic import WriteGate

    layer = app.brain.layer("episodes")
    recall = app.brain.recall
    base_cfg, base_index, base_layers = layer.config, layer.associative, list(recall.layers)
    rows: dict[str, dict] = {}

    async def variant(name: str, *, cfg=None, assoc=None, layers=None) -> None:
        layer.config = cfg or base_cfg
        layer.associative = AssociativeIndex(app.db.pool, assoc) if assoc is not None else base_index
        recall.layers = layers if layers is not None else base_layers
        try:
            print(f"  ablation: {name}", file=sys.stderr)
            rows[name] = summarize(await ask(args, app, questions))
        finally:
            layer.config, layer.associative, recall.layers = base_cfg, base_index, base_layers

    a, hei = base_index.config, _replace(base_cfg, associative=True)
    await variant("+HEI-NW list (k-WTA keys, FAISS, Hopfield)", cfg=hei)
    await variant("+HEI-NW list -sparsity (dense keys)", cfg=hei, assoc=_replace(a, sparse=False))
    await variant("+HEI-NW list -Hopfield", cfg=hei, assoc=_replace(a, hopfield=False))
    await variant("+HEI-NW list, Hopfield 3 steps", cfg=hei, assoc=_replace(a, hopfield_steps=3))
    await variant(
        "-hybrid (dense episodes only)",
        cfg=_replace(base_cfg, lexical=False, time_weight=0.0, speaker_weight=0.0, associative=False),
    )
    await variant(
        "-graph -hybrid",
        cfg=_replace(base_cfg, lexical=False, time_weight=0.0, speaker_weight=0.0, associative=False),
        layers=[x for x in base_layers if x.name != "facts"],
    )
    await variant("-graph (no facts layer)", layers=[x for x in base_layers if x.name != "facts"])
    await variant("-neighbours (each hit alone)", cfg=_replace(base_cfg, neighbours=0, neighbours_after=0))
    await variant("every neighbour, no word budget", cfg=_replace(base_cfg, context="all", word_budget=None))
    await variant("+entity expansion (graph names searched as one more list)", cfg=_replace(base_cfg, expansion=True))
    gated: dict[str, float] = {}
    for tau in args.gate_taus:
        gate = WriteGate(tau=tau)  # the layer's, for imported messages and live ones
        saved = layer.import_gate, layer._gate
        layer.import_gate = layer._gate = gate
        try:
            for conv in convs:
                await app.importer.run(args.data / f"{conv}.jsonl", f"{conv}~tau{tau}")
        finally:
            layer.import_gate, layer._gate = saved
        print(f"  ablation: gate tau={tau}", file=sys.stderr)
        rows[f"+gate (tau {tau})"] = summarize(await ask(args, app, questions, lambda c, t=tau: f"{c}~tau{t}"))
        gated[f"tau {tau}"] = (await writes_per_1k_words(app, [f"{c}~tau{tau}" for c in convs]))["per_1k_words"]
    return {"rows": rows, "writes_per_1k_words": gated}


async def run_words_curve(args: argparse.Namespace, app, questions: list[Question]) -> dict[str, dict]:
    """recall_any@k against the words in the top 10 at several word budgets (the episodes layer's default,
    ``HybridConfig.word_budget``; a plan that sets its own, sql/023, keeps it), on the same imported data, so
    the budget is chosen, not guessed. Two reference rows: no budget, and every neighbour with no budget (as
    recall was before issue 33, but each turn shown once)."""
    from dataclasses import replace as _replace

    layer = app.brain.layer("episodes")
    base = layer.config
    variants = [(f"{b} words", _replace(base, word_budget=b)) for b in args.words_curve]
    variants += [
        ("no budget", _replace(base, word_budget=None)),
        ("every neighbour, no budget", _replace(base, context="all", word_budget=None)),
    ]
    rows: dict[str, dict] = {}
    try:
        for name, cfg in variants:
            layer.config = cfg
            print(f"  words curve: {name}", file=sys.stderr)
            rows[name] = summarize(await ask(args, app, questions))
    finally:
        layer.config = base
    return rows


def print_words_curve(default: dict[str, dict], curve: dict[str, dict], default_budget: int | None) -> None:
    print(
        f"\nrecall against words: the episodes' word budget (default {default_budget}) -> recall_any@5 / @10 / "
        "@20 and the mean words in the top 10 (overall: adversarial questions excluded)"
    )
    print("| budget | any@5 | any@10 | any@20 | words in the top 10 |")
    print("|---|---|---|---|---|")
    for name, rows in [("default", default), *curve.items()]:
        o = rows["overall"]
        print(f"| {name} | {o['any@5']:.3f} | {o['any@10']:.3f} | {o['any@20']:.3f} | {o['words@10']:.0f} |")


def _dream_time(args: argparse.Namespace, conv: str) -> datetime:
    """The night after the conversation's last message: when the nightly dream would first see all of it."""
    last = max(datetime.fromisoformat(t.timestamp) for t in load_conversation(args.data / f"{conv}.jsonl"))
    return last + timedelta(hours=8)


async def run_dream(args: argparse.Namespace, app, questions: list[Question], convs: list[str]) -> dict:
    """Replay and consolidation (issue 12): the same questions after one dream per conversation, then with the
    consolidation's parts switched off in turn (each on the split imported again into scopes of its own, dreamt
    once)."""
    facts = app.brain.layer("facts")
    all_steps = list(app.dream.steps)
    rows: dict[str, dict] = {}
    counts: dict[str, dict] = {}

    async def dream(tag: str, *, fast_track: int | None = None, skip: tuple[str, ...] = ()) -> None:
        saved = facts.fast_track if facts is not None else None
        if facts is not None and fast_track is not None:
            facts.fast_track = fast_track
        app.dream.steps = [(n, s) for n, s in all_steps if n not in skip]
        t0 = time.perf_counter()
        try:
            totals: dict[str, float] = {}
            for conv in convs:
                scope = conv if not tag else f"{conv}~{tag}"
                if tag:
                    await app.importer.run(args.data / f"{conv}.jsonl", scope)
                report = await app.dream.run(_dream_time(args, conv), scope=scope)
                for step_name, step in report.steps.items():
                    for key, value in step.counts.items():
                        if key in CONSOLIDATION_COUNTS and isinstance(value, int | float):
                            totals[f"{step_name}.{key}"] = totals.get(f"{step_name}.{key}", 0) + value
            counts[tag or "default"] = {**totals, "seconds": round(time.perf_counter() - t0, 1)}
        finally:
            app.dream.steps = all_steps
            if facts is not None:
                facts.fast_track = saved
        print(f"  dreamt ({tag or 'default'}): {counts[tag or 'default']}", file=sys.stderr)
        rows[f"+dream{(' ' + DREAM_VARIANTS[tag]) if tag else ''}"] = summarize(
            await ask(args, app, questions, lambda c: f"{c}~{tag}" if tag else c)
        )

    await dream("")
    await dream("nofast", fast_track=10**9)
    await dream("noconsol", skip=("knowledge_graph_consolidation",))
    await dream("noreplay", skip=("episodic_replay", "episodic_decay", "knowledge_graph_consolidation"))
    return {"rows": rows, "counts": counts}


CONSOLIDATION_COUNTS = (
    "replayed",
    "forgotten",
    "merged",
    "routed_reviewed",
    "admitted",
    "fast_tracked",
    "joined_existing",
    "contradictions",
    "pruned_edges",
    "merged_nodes",
)
DREAM_VARIANTS = {"nofast": "-fast-track", "noconsol": "-consolidation", "noreplay": "-replay -decay -consolidation"}


def print_dream(before: dict[str, dict], dream: dict, k: int = 10) -> None:
    print(
        f"\nreplay and consolidation: recall_any@{k} before and after one dream per conversation "
        "(at its last message + 8 h); ablation rows re-import and dream with one part off"
    )
    cats = [*CATEGORIES[:-1], "overall"]
    print("| configuration | " + " | ".join(cats) + " |")
    print("|---|" + "---|" * len(cats))
    for name, rows in [("no dream (import only)", before), *dream["rows"].items()]:
        print(f"| {name} | " + " | ".join(f"{rows[c][f'any@{k}']:.3f}" if c in rows else "-" for c in cats) + " |")
    for tag, c in dream["counts"].items():
        print(f"  {tag}: " + ", ".join(f"{k.split('.')[-1]} {v:g}" for k, v in c.items() if v))


def print_ablation(default: dict[str, dict], ablation: dict, writes: dict, k: int = 10) -> None:
    print(f"\nablation: recall_any@{k} with one part changed (same data and questions; gate rows re-import)")
    cats = [*CATEGORIES[:-1], "overall"]
    print("| configuration | " + " | ".join(cats) + " | writes / 1k words |")
    print("|---|" + "---|" * (len(cats) + 1))
    for name, rows in [("default", default), *ablation["rows"].items()]:
        cells = [f"{rows[c][f'any@{k}']:.3f}" if c in rows else "-" for c in cats]
        rate = (
            writes["per_1k_words"]
            if name == "default"
            else ablation["writes_per_1k_words"].get(name.removeprefix("+gate (").removesuffix(")"), None)
        )
        print(
            f"| {name} | " + " | ".join(cells) + f" | {rate:.1f} |"
            if rate is not None
            else f"| {name} | " + " | ".join(cells) + " | - |"
        )


# --- baselines ----------------------------------------------------------------------------------------------


def run_baselines(questions: list[Question], turns: dict[str, list[Turn]], embedder) -> dict[str, list[Answered]]:
    out: dict[str, list[Answered]] = {"MiniLM": [], "BM25": [], "BM25+MiniLM RRF": []}
    for conv in sorted({q.conv for q in questions}):
        ts = turns[conv]
        docs = [f"{t.speaker}: {t.text}" for t in ts]
        qs = [q for q in questions if q.conv == conv]
        dv = embedder.encode_sync(docs)
        qv = embedder.encode_sync([q.question for q in qs])
        bm = BM25(docs)
        for q, v in zip(qs, qv):
            t0 = time.perf_counter()
            sims = dv @ v
            dense = list(np.argsort(-sims, kind="stable")[:BASELINE_DEPTH])
            dense_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            scores = bm.scores(q.question)
            lexical = sorted(scores, key=lambda i: (-scores[i], i))[:BASELINE_DEPTH]
            lex_s = time.perf_counter() - t0
            fused = rrf([dense, lexical], k=RRF_K, limit=BASELINE_DEPTH)

            def ans(order: Sequence[int], top1: float | None, latency: float) -> Answered:
                return Answered(
                    q, [(ts[i].id,) for i in order], sum(len(words(docs[i])) for i in order[:10]), top1, latency
                )

            out["MiniLM"].append(ans(dense, float(sims[dense[0]]), dense_s))
            out["BM25"].append(ans(lexical, scores[lexical[0]] if lexical else 0.0, lex_s))
            fused_top = 1 / (RRF_K + 1) * ((dense[:1] == fused[:1]) + (lexical[:1] == fused[:1]))
            out["BM25+MiniLM RRF"].append(ans(fused, fused_top, dense_s + lex_s))
    return out


# --- tables -------------------------------------------------------------------------------------------------


def summarize(answered: list[Answered]) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    groups = {c: [a for a in answered if a.question.category == c] for c in CATEGORIES}
    groups["overall"] = [a for a in answered if a.question.category != "adversarial"]
    for name, group in groups.items():
        if not group:
            continue
        row: dict = {"n": len(group)}
        if name != "adversarial":
            for k in CUTOFFS:
                hits = [hits_at(a.ranked, a.question.evidence, k) for a in group]
                row[f"any@{k}"] = sum(h[0] for h in hits) / len(group)
                row[f"all@{k}"] = sum(h[1] for h in hits) / len(group)
        tops = [a.top1 for a in group if a.top1 is not None]
        row["top1"] = statistics.fmean(tops) if tops else None
        row["words@10"] = statistics.fmean(a.words_top10 for a in group)
        lat = [a.latency_s for a in group if a.latency_s is not None]
        row["p50_ms"] = percentile(lat, 50) * 1000 if lat else None
        row["p95_ms"] = percentile(lat, 95) * 1000 if lat else None
        rows[name] = row
    return rows


def print_table(title: str, rows: dict[str, dict]) -> None:
    print(f"\n{title}")
    head = (
        ["category", "n"]
        + [f"any@{k}" for k in CUTOFFS]
        + [f"all@{k}" for k in CUTOFFS]
        + ["words@10", "top1", "p50 ms", "p95 ms"]
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, r in rows.items():
        cells = [name, str(r["n"])]
        for key in [f"any@{k}" for k in CUTOFFS] + [f"all@{k}" for k in CUTOFFS]:
            cells.append(f"{r[key]:.3f}" if key in r else "-")
        cells.append(f"{r['words@10']:.0f}")
        cells.append(f"{r['top1']:.3f}" if r.get("top1") is not None and name == "adversarial" else "-")
        cells += [
            f"{r['p50_ms']:.1f}" if r["p50_ms"] is not None else "-",
            f"{r['p95_ms']:.1f}" if r["p95_ms"] is not None else "-",
        ]
        print("| " + " | ".join(cells) + " |")


def print_comparison(systems: dict[str, dict[str, dict]], k: int = 10) -> None:
    names = list(systems)
    print(f"\nrecall_any@{k} by system (adversarial excluded from overall)")
    print("| category | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for cat in [*CATEGORIES[:-1], "overall"]:
        cells = [f"{systems[s][cat][f'any@{k}']:.3f}" if cat in systems[s] else "-" for s in names]
        print(f"| {cat} | " + " | ".join(cells) + " |")
    cells = [f"{systems[s]['overall']['words@10']:.0f}" if "overall" in systems[s] else "-" for s in names]
    print("| words in the top 10 (overall) | " + " | ".join(cells) + " |")


# --- answers with the bundled model -------------------------------------------------------------------------


def pick_for_llm(answered: list[Answered], limit: int) -> list[Answered]:
    by = {c: [a for a in answered if a.question.category == c] for c in CATEGORIES}
    out: list[Answered] = []
    while len(out) < limit and any(by.values()):
        for c in CATEGORIES:
            if by[c] and len(out) < limit:
                out.append(by[c].pop(0))
    return out


async def run_llm(args: argparse.Namespace, app, answered: list[Answered], turns: dict[str, list[Turn]]) -> dict:
    """Each picked question answered by the bundled model, greedy, three ways: memory (`hippobot ask`'s path,
    Brain.ask: the archetype's plan, every layer's recall, the prompt as the bot builds it), core (the same
    prompt without any memory) and long-context (the conversation's latest turns that fit the budget); with
    the reader adapter and without it (both loaded once, swapped into the same app)."""
    from bot.app import engine_config, prompt_builder
    from bot.engines import load_engine
    from memory.layers.base import TRANSCRIPT, MemoryItem, Section

    engines = {}
    for reader in args.reader:
        t0 = time.perf_counter()
        settings = app.settings.model_copy(
            update={"reader": reader != "off", "max_new_tokens": args.llm_tokens, "temperature": 0.0, "seed": 7}
        )
        config = engine_config(settings, progress=False)
        if reader not in ("on", "off"):  # another adapter's directory (bot/reader/'s layout), to compare
            config = replace(config, reader=Path(reader).resolve())
        engines[reader] = await asyncio.to_thread(load_engine, settings, config)
        print(f"  model {engines[reader].name} loaded in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    brain = app.brain
    picked = pick_for_llm(
        [a for a in answered if not args.categories or a.question.category in args.categories], args.llm_limit
    )
    biases = args.abstain_bias if args.abstain_bias is not None else [brain.abstain_bias]
    orders = args.memory_order or [prompt_builder(settings, next(iter(engines.values()))).memory_order]
    variants = [
        (
            reader,
            bias,
            order,
            (reader if len(biases) == 1 else f"{reader}@{bias:g}") + ("" if len(orders) == 1 else f"#{order}"),
        )
        for reader in engines
        for bias in biases
        for order in orders
    ]
    results: dict[str, list[dict]] = {key: [] for *_, key in variants}
    shipped_bias = brain.abstain_bias
    try:
        for reader, bias, order, key in variants:
            llm = engines[reader]
            brain.use_model(llm, replace(prompt_builder(settings, llm), memory_order=order))
            brain.abstain_bias = bias
            for a in picked:
                q = a.question
                history = tuple(
                    MemoryItem("turn", None, f"{t.speaker}: {t.text}", f"{t.speaker}: {t.text}", ())
                    for t in turns[q.conv]
                )
                t1 = time.perf_counter()
                reply = await brain.ask(q.question, q.conv, author_id=AUTHOR, author_name=ASKER)
                text = _first_line(await reply.complete())
                grounding = reply.grounding()
                evidence = set(q.evidence)
                row: dict = {
                    "qid": q.qid,
                    "category": q.category,
                    "question": q.question,
                    "gold": q.answer,
                    "archetype": reply.plan.archetype,
                }
                row["memory_hit"] = bool(evidence) and any(
                    s.external_id in evidence for i in reply.memories_in_prompt() for s in i.sources
                )
                row["memory"] = _scored(q, text, reply.prompt.tokens, time.perf_counter() - t1)
                row["memory"]["first_token_s"] = reply.trace.first_token_s
                row["memory"]["sources"] = [s.external_id for s in grounding.sources]
                row["memory"]["sources_hit"] = bool(evidence & set(row["memory"]["sources"]))
                row["memory"]["replaced"] = reply.replaced  # the grounding check put its line instead
                row["memory"]["model"] = _first_line(reply.model_text)
                if args.keep_prompts:
                    row["memory"]["prompt"] = reply.prompt.text
                empty = replace(reply.bundle, sections=())
                prompts = (
                    {}
                    if args.memory_only
                    else {
                        "core": brain.prompts.build(empty, ASKER, q.question),
                        "longctx": brain.prompts.build(
                            replace(empty, sections=(Section("turns", "Conversation", history, placement=TRANSCRIPT),)),
                            ASKER,
                            q.question,
                        ),
                    }
                )
                if args.no_long:
                    prompts.pop("longctx", None)
                for mode, prompt in prompts.items():
                    t1 = time.perf_counter()
                    gen = llm.generate(
                        prompt.text, stop=prompt.stop, stop_pattern=prompt.stop_pattern, max_new_tokens=args.llm_tokens
                    )
                    row[mode] = _scored(q, _first_line(await gen.complete()), prompt.tokens, time.perf_counter() - t1)
                results[key].append(row)
                print(
                    f"  llm reader={key} {len(results[key])}/{len(picked)} {q.qid}: "
                    f"core={row.get('core', {}).get('reply', '')[:30]!r} memory={row['memory']['reply'][:40]!r}",
                    file=sys.stderr,
                )
            if args.llm_chat:
                await _in_chat(app, key, picked, {r["qid"]: r for r in results[key]}, keep_prompts=args.keep_prompts)
    finally:
        for llm in engines.values():
            await asyncio.to_thread(llm.close)
        brain.use_model(None, None)
        brain.abstain_bias = shipped_bias
    return {"rows": results}


async def _in_chat(
    app, reader: str, picked: list[Answered], rows: dict[str, dict], *, keep_prompts: bool = False
) -> None:
    """The same questions asked the way a person asks them in a chat (`--llm-chat`): one after another in one
    channel per conversation, through Brain.respond as the bot answers a message, so each question's recent
    turns are the earlier questions and the bot's replies to them. Scored as ``row["chat"]``. The channel is
    forgotten afterwards, so what it stored does not reach the next run."""
    from bot.brain import IncomingTurn

    brain = app.brain
    channel = f"memeval-chat-{reader}"
    for conv in dict.fromkeys(a.question.conv for a in picked):
        for a in (a for a in picked if a.question.conv == conv):
            q = a.question
            t1 = time.perf_counter()
            reply = await brain.respond(
                IncomingTurn(
                    scope=conv,
                    source="console",
                    channel_id=channel,
                    author_id=AUTHOR,
                    author_name=ASKER,
                    text=q.question,
                )
            )
            text = _first_line(await reply.complete())
            await brain.drain()
            rows[q.qid]["chat"] = _scored(q, text, reply.prompt.tokens, time.perf_counter() - t1)
            if keep_prompts:
                rows[q.qid]["chat"]["prompt"] = reply.prompt.text
            print(f"  chat reader={reader} {q.qid}: {text[:50]!r}", file=sys.stderr)
        await app.provenance.forget_channel("console", channel, scope=conv)


def _first_line(text: str) -> str:
    return text.strip().split("\n")[0].strip()


# A reply that says the bot does not know (or remember). Generic on purpose: it was written before any split's
# replies were read, and is never extended to fit one.
ABSTAINS = re.compile(
    r"\b(?:do not|don't|dont|does not|doesn't|did not|didn't|can't|cannot|can not) (?:know|remember|recall)\b"
    r"|\bno (?:idea|memory|record)\b|\bnot (?:sure|mentioned|aware)\b|\bnever (?:mentioned|said|told)\b"
    r"|\b(?:nobody|no one|no-one) (?:has )?(?:told|mentioned|said)\b|\bi'm not sure\b",
    re.I,
)


def abstains(reply: str) -> bool:
    return bool(ABSTAINS.search(reply.replace("’", "'")))


def _scored(q: Question, reply: str, tokens: int, seconds: float) -> dict:
    """EM / F1 / contains against the gold answer; on an adversarial question (nothing was said) a reply that
    abstains is the right answer and scores 1 on all three."""
    abstained = abstains(reply)
    if q.category == "adversarial":
        em = f1 = contains = float(abstained)
    else:
        em, f1, contains = exact_match(reply, q.answer), token_f1(reply, q.answer), contains_match(reply, q.answer)
    return {
        "reply": reply,
        "em": em,
        "f1": f1,
        "contains": contains,
        "abstained": abstained,
        "tokens": tokens,
        "seconds": seconds,
    }


def print_guard(rows: list[dict]) -> None:
    """What the grounding check (bot/grounding.py) did to the memory replies: how many it replaced, and of those
    how many held the gold answer (its cost) or, on never-said questions, answered anyway (inventions it stopped)."""
    answerable = [r for r in rows if r["category"] != "adversarial" and "replaced" in r["memory"]]
    adversarial = [r for r in rows if r["category"] == "adversarial" and "replaced" in r["memory"]]
    cut = [r for r in answerable if r["memory"]["replaced"]]
    right = [
        r
        for r in cut
        if contains_match(r["memory"]["model"], r["gold"]) or token_f1(r["memory"]["model"], r["gold"]) >= 0.5
    ]
    stopped = [r for r in adversarial if r["memory"]["replaced"] and not abstains(r["memory"]["model"])]
    print(
        f"grounding check: replaced {len(cut)} of {len(answerable)} answerable replies ({len(right)} of them "
        f"held the gold answer: contains, or F1 >= 0.5) and {len(stopped)} of {len(adversarial)} never-said "
        "questions' answers (inventions it stopped)"
    )


def print_llm(result: dict) -> dict:
    summary: dict = {}
    for reader, rows in result["rows"].items():
        reader_bias, _, order = reader.partition("#")
        name, _, bias = reader_bias.partition("@")
        label = (
            {"on": "with the reader adapter", "off": "base model (no reader)"}.get(name, f"with the adapter in {name}")
            + (f", abstain bias {bias}" if bias else "")
            + (f", memories {order.replace('_', ' ')}" if order else "")
        )
        print(
            f"\nanswers, bundled model {label}, greedy: EM / F1 / contains per mode (core: no memory; memory: "
            "Brain.ask as shipped; long: the latest turns that fit); ΔEM = EM(memory) - EM(core); adversarial "
            "rows score an abstaining reply as right"
        )
        head = [
            "category",
            "n",
            "core EM",
            "core F1",
            "mem EM",
            "mem F1",
            "mem contains",
            "long EM",
            "long F1",
            "long contains",
            "ΔEM",
            "memory_hit_rate",
            "abstain (mem)",
            "answered (mem)",
            "sources hit",
        ]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        groups = {c: [r for r in rows if r["category"] == c] for c in CATEGORIES}
        groups["overall"] = rows
        summary[reader] = {}
        for name, g in groups.items():
            if not g:
                continue

            def m(mode: str, key: str) -> float:  # (core and long-context are absent with --memory-only)
                return statistics.fmean(float(r[mode][key]) for r in g) if all(mode in r for r in g) else float("nan")

            answerable = [r for r in g if r["category"] != "adversarial"]
            adversarial = [r for r in g if r["category"] == "adversarial"]
            hit = statistics.fmean(r["memory_hit"] for r in answerable) if answerable else float("nan")
            abstain = statistics.fmean(r["memory"]["abstained"] for r in adversarial) if adversarial else float("nan")
            answered = (
                statistics.fmean(not r["memory"]["abstained"] for r in answerable) if answerable else float("nan")
            )
            grounded = [r for r in answerable if r["memory"]["contains"]]
            sources_hit = statistics.fmean(r["memory"]["sources_hit"] for r in grounded) if grounded else float("nan")
            s = {
                "n": len(g),
                **{
                    f"{mode}_{key}": m(mode, key)
                    for mode in ("core", "memory", "longctx")
                    for key in ("em", "f1", "contains")
                },
                "delta_em": m("memory", "em") - m("core", "em"),
                "memory_hit_rate": hit,
                "abstention": abstain,
                "answered": answered,
                "sources_hit": sources_hit,
            }
            if all("chat" in r for r in g):
                s |= {f"chat_{key}": m("chat", key) for key in ("em", "f1", "contains")}
                s["chat_abstention"] = (
                    statistics.fmean(r["chat"]["abstained"] for r in adversarial) if adversarial else float("nan")
                )
                s["chat_answered"] = (
                    statistics.fmean(not r["chat"]["abstained"] for r in answerable) if answerable else float("nan")
                )
            summary[reader][name] = s
            print(
                f"| {name} | {len(g)} | {s['core_em']:.3f} | {s['core_f1']:.3f} | {s['memory_em']:.3f} | "
                f"{s['memory_f1']:.3f} | {s['memory_contains']:.3f} | {s['longctx_em']:.3f} | "
                f"{s['longctx_f1']:.3f} | {s['longctx_contains']:.3f} | {s['delta_em']:+.3f} | {hit:.3f} | "
                f"{abstain:.3f} | {answered:.3f} | {sources_hit:.3f} |"
            )
        if rows and all("chat" in r for r in rows):
            print(
                f"\nthe same questions asked in a chat ({label}): one after another in one channel per "
                "conversation, through Brain.respond, so the earlier questions and replies are the recent turns"
            )
            print("| category | n | chat EM | chat F1 | chat contains | abstain (chat) | answered (chat) |")
            print("|---|---|---|---|---|---|---|")
            for name, s in summary[reader].items():
                print(
                    f"| {name} | {s['n']} | {s['chat_em']:.3f} | {s['chat_f1']:.3f} | {s['chat_contains']:.3f} | "
                    f"{s['chat_abstention']:.3f} | {s['chat_answered']:.3f} |"
                )
        print_guard(rows)
        speeds = [r["memory"]["first_token_s"] for r in rows if r["memory"].get("first_token_s") is not None]
        if speeds:
            print(f"memory replies: first token p50 {percentile(speeds, 50):.2f} s, p95 {percentile(speeds, 95):.2f} s")
    print(
        "\nsources hit: of the memory replies that contain the gold answer, the share whose sources line (bot/"
        "grounding.py) names an evidence turn"
    )
    return summary


# --- main ---------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--split",
        choices=[
            "dev",
            "heldout",
            "heldout2",
            "heldout3",
            "heldout4",
            "heldout5",
            "heldout6",
            "heldout7",
            "heldout8",
            "heldout9",
            "heldout10",
            "heldout11",
            "all",
        ],
        default="heldout",
    )
    p.add_argument(
        "--data",
        type=Path,
        default=DATA_DIR,
        help="a data set: conv-*.jsonl and questions*.jsonl (default: the generated chats; "
        "bench/data/memory_eval_natural: long hand-written ones)",
    )
    p.add_argument("--conversations", type=int, default=None, help="only the first N conversations of the split")
    p.add_argument("--k", type=int, default=20, help="items asked of recall (the plan's vector count)")
    p.add_argument("--json", type=Path, default=None, help="write every number (and per-question ranks) here")
    p.add_argument("--database-url", default=None, help="admin URL of a server; default: embedded, throwaway")
    p.add_argument("--with-transcript", action="store_true", help="rank the recent-turns section too (last)")
    p.add_argument("--no-baselines", action="store_true")
    p.add_argument("--ablation", action="store_true", help="also each HEI-NW part and hybrid list switched off")
    p.add_argument(
        "--dream",
        action="store_true",
        help="also dream once per conversation (at its end + 8 h) and ask again, then with replay, "
        "consolidation and its fast-track switched off in turn",
    )
    p.add_argument(
        "--months",
        action="store_true",
        help="with --dream: the months-long evaluation instead (bench/dream_months.py: a server's 92 "
        "days, a nightly dream, recall of facts at the end; --split dev or heldout seeds)",
    )
    p.add_argument(
        "--words-curve",
        type=int,
        nargs="*",
        default=None,
        metavar="WORDS",
        help="also recall against words at these word budgets of the episodes layer (no value: "
        f"{' '.join(map(str, WORDS_CURVE))})",
    )
    p.add_argument(
        "--gate-taus",
        type=float,
        nargs="*",
        default=[0.5, 0.66, 0.78],
        help="write-gate thresholds the ablation imports again under",
    )
    p.add_argument("--no-hippobot", action="store_true", help="baselines only (no database)")
    p.add_argument("--llm", action="store_true", help="also score answers of the bundled model")
    p.add_argument("--llm-limit", type=int, default=40)
    p.add_argument(
        "--categories",
        nargs="+",
        choices=CATEGORIES,
        default=None,
        help="with --llm: ask only questions of these categories (e.g. every temporal one)",
    )
    p.add_argument(
        "--abstain-bias",
        type=float,
        nargs="+",
        default=None,
        help="with --llm: answer at each of these logit biases on the word that opens 'I don't know' "
        "(Brain.abstain_bias; default: the shipped setting, HIPPOBOT_READER_ABSTAIN_BIAS)",
    )
    p.add_argument(
        "--memory-order",
        nargs="+",
        choices=["best_first", "best_last"],
        default=None,
        help="with --llm: answer with the memories in each of these orders (PromptBuilder.memory_order; "
        "default: the shipped one)",
    )
    p.add_argument(
        "--reader",
        nargs="+",
        default=["off", "on"],
        help="with --llm: answer with the reader adapter (on), without it (off), or both (default); "
        "a directory in bot/reader/'s layout answers with that adapter instead, to compare",
    )
    p.add_argument(
        "--no-long",
        action="store_true",
        help="with --llm: no long-context prompts (the longest: half the time), core and memory only",
    )
    p.add_argument(
        "--memory-only",
        action="store_true",
        help="with --llm: only the memory rows (no core and long-context prompts: a third of the time)",
    )
    p.add_argument(
        "--llm-chat",
        action="store_true",
        help="also ask the questions one after another in a chat (Brain.respond, recent turns and all)",
    )
    p.add_argument("--keep-prompts", action="store_true", help="--json keeps each memory prompt (for reading)")
    p.add_argument("--llm-tokens", type=int, default=24, help="max new tokens per answer")
    args = p.parse_args(argv)
    for reader in args.reader:
        if reader not in ("on", "off") and not (Path(reader) / "adapter.gguf").is_file():
            p.error(f"--reader {reader}: neither on, off nor an adapter directory (no adapter.gguf in it)")
    if args.words_curve == []:
        args.words_curve = list(WORDS_CURVE)
    return args


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    offline_environment()
    if args.months:
        if not args.dream:
            print("memory_eval: --months goes with --dream", file=sys.stderr)
            return 2
        if args.split not in ("dev", "heldout", "all"):
            print(f"memory_eval: --months has no {args.split} split (its seeds are dev and heldout)", file=sys.stderr)
            return 2
        from bench import dream_months

        await dream_months.run(
            dream_months.parse_args(
                ["--split", "heldout" if args.split == "heldout" else "dev"]
                + (["--database-url", args.database_url] if args.database_url else [])
            )
        )
        return 0
    from memory.embed import MiniLMEmbedder

    try:
        questions = select(load_questions_in(args.data), args.split, args.conversations)
    except (OSError, ValueError, KeyError) as exc:  # a missing, unreadable or malformed data set
        print(f"memory_eval: {args.data}: {exc!r}", file=sys.stderr)
        return 2
    if not questions:
        print(f"memory_eval: {args.data}: no {args.split} questions", file=sys.stderr)
        return 2
    convs = sorted({q.conv for q in questions})
    turns = {c: load_conversation(args.data / f"{c}.jsonl") for c in convs}
    print(
        f"split {args.split}: {len(convs)} conversation(s), {sum(len(t) for t in turns.values())} turns, "
        f"{len(questions)} questions; k={args.k}",
        file=sys.stderr,
    )
    embedder = MiniLMEmbedder()
    embedder.load()
    systems: dict[str, dict[str, dict]] = {}
    report: dict = {"split": args.split, "conversations": convs, "k": args.k, "questions": len(questions)}
    hb = None
    if not args.no_hippobot:
        hb = await run_hippobot(args, questions, convs, embedder, turns)
        systems["hippobot"] = summarize(hb["answered"])
        total_import = sum(v["seconds"] for v in hb["imports"].values())
        imported = sum(v["imported"] for v in hb["imports"].values())
        report["hippobot"] = {
            "imports": hb["imports"],
            "open_s": hb["open_s"],
            "batched_s": hb["batched_s"],
            "ranks": {a.question.qid: dedupe_ranked(a.ranked)[:20] for a in hb["answered"]},
        }
        print(
            f"\nimport: {imported} messages in {total_import:.1f} s ({imported / max(total_import, 1e-9):.0f}/s); "
            f"app open {hb['open_s']:.1f} s; batched recall of {len(questions)} queries "
            f"{hb['batched_s']:.2f} s ({hb['batched_s'] / max(len(questions), 1) * 1000:.1f} ms/query)"
        )
        print_table(
            f"hippobot recall (split {args.split}, k={args.k}; per-query latency = one "
            "brain.contexts call per question, embedding included)",
            systems["hippobot"],
        )
        w = hb["writes"]
        print(f"write gate: {w['episodes']} episodes from {w['words']} words ({w['per_1k_words']:.1f} per 1,000 words)")
        report["hippobot"]["writes"] = w
        if "ablation" in hb:
            print_ablation(systems["hippobot"], hb["ablation"], w)
            report["ablation"] = hb["ablation"]
        if "dream" in hb:
            print_dream(systems["hippobot"], hb["dream"])
            report["dream"] = hb["dream"]
        if "words_curve" in hb:
            print_words_curve(systems["hippobot"], hb["words_curve"], hb["word_budget"])
            report["words_curve"] = hb["words_curve"]
    if not args.no_baselines:
        baselines = run_baselines(questions, turns, embedder)
        for name, answered in baselines.items():
            systems[name] = summarize(answered)
            print_table(
                f"baseline {name} (in-process over 'speaker: text'; latency = ranking only, the "
                "question's embedding not included)",
                systems[name],
            )
    if len(systems) > 1:
        print_comparison(systems)
    report["systems"] = systems
    if args.llm and hb is not None:
        report["llm"] = {"summary": print_llm(hb["llm"]), "rows": hb["llm"]["rows"]}
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
