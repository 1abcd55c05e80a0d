"""Consolidation that a month shows (issue 30.1): a server's months of history, a nightly dream, recall at the end.

    python bench/dream_months.py                    # dev seeds, every row
    python bench/dream_months.py --split heldout    # the held-out seeds (once, at the end; never tuned on)
    python bench/memory_eval.py --dream --months    # the same, from the memory evaluation

Each seed's history (bench/months_data.py: 10 people, 92 days, three channels) is replayed day by day
into one scope per row through `hippobot import`'s code (App.importer.run: the real absorption path,
every layer's absorb), with the injected clock at the end of that day; after each day, the dream rows
run the dream cycle at 03:00 the next night (``now`` injected) with the memory steps: episodic replay,
episodic decay, the graph's consolidation and its maintenance (the cycle's archetype analysis, digest,
persona, places and distillation steps are left out to keep the run to minutes on 2 cores; they do not
touch episodes or facts). Rows: no dream, the full dream, and the dream with one step left out
(-replay, -consolidation, -decay).

At the end (the day after the last, noon), each fact's question ("Where does Mina live?") goes through
Brain.contexts (`hippobot recall`'s code) with k=10 (the plan's episode count), as a console asker; every
memory item it returns counts (the episodes' up to 10, then the graph's facts, which rank after them, up
to 6: what the prompt is built from), the recent-turns transcript left out. Per category of fact
(repeated: said on >= 2 days; confirmed: said once, then confirmed in a reply; once: said once;
contradicted: the newer value must win):

- ``recall``: an item holds a message that states the fact (a fact item through its
  sources, an episode or a lexical hit through its message); for a contradicted fact, the newest value's
  message, ranked above every item of the older value;
- ``fact``: a graph fact item states the gold answer (the newest value), and none of
  the older value ranks above it: the part of recall that outlives the episodes.

And the store: episodes and facts (graph edges) left in the scope, and facts with a bot message among
their sources (must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.months_data import DEV_SEEDS, HELDOUT_SEEDS, START, History, MonthQuestion, generate  # noqa: E402

K = 10
ASKER = "console:months"
CATEGORIES = ("repeated", "confirmed", "once", "contradicted")
MEMORY_STEPS = ("episodic_replay", "episodic_decay", "knowledge_graph_consolidation", "knowledge_graph")
ROWS: dict[str, tuple[str, ...] | None] = {  # row -> the memory steps it leaves out (None: no dream at all)
    "no dream": None,
    "dream": (),
    "-replay": ("episodic_replay",),
    "-consolidation": ("knowledge_graph_consolidation",),
    "-decay": ("episodic_decay",),
}


@dataclass
class RowResult:
    hits: dict[str, list[bool]]
    fact_hits: dict[str, list[bool]]
    episodes: int
    facts: int
    bot_facts: int
    messages: int
    dream_s: float


def scope_of(seed: int, row: str) -> str:
    return f"months-{seed}-" + row.replace(" ", "").replace("-", "no")


def _hit(items: Sequence, q: MonthQuestion, k: int) -> tuple[bool, bool]:
    """(recall, fact@k) of one question's ranked items (see the module docstring)."""
    evidence, stale = set(q.evidence), set(q.stale)
    answer = q.answer.lower()
    recall = fact = False
    for item in items[:k] if k else items:
        ids = {s.external_id for s in item.sources}
        is_fact = item.kind == "fact"
        if ids & stale and not (ids & evidence):
            return recall, fact  # the older value ranks first: the newer did not win
        if ids & evidence:
            recall = True
            if is_fact and answer in item.text.lower():
                fact = True
            if recall and fact:
                return True, True
    return recall, fact


async def run_history(
    app, clock, history: History, rows: Sequence[str], work: Path, *, log=print, verbose: bool = False
) -> dict[str, RowResult]:
    """Replay one history into one scope per row, dreaming nightly in the dream rows; measure at the end."""
    all_steps = list(app.dream.steps)
    dream_s = {row: 0.0 for row in rows}
    for day, messages in enumerate(history.by_day()):
        if messages:
            path = work / f"day-{history.seed}-{day:03d}.jsonl"
            path.write_text("".join(json.dumps(m) + "\n" for m in messages))
            clock.set(START + timedelta(days=day, hours=23, minutes=55))
            for row in rows:
                await app.importer.run(path, scope_of(history.seed, row))
        night = START + timedelta(days=day + 1, hours=3)
        clock.set(night)
        for row in rows:
            skip = ROWS[row]
            if skip is None:
                continue
            app.dream.steps = [(n, s) for n, s in all_steps if n in MEMORY_STEPS and n not in skip]
            t0 = time.perf_counter()
            try:
                report = await app.dream.run(night, scope=scope_of(history.seed, row))
            finally:
                app.dream.steps = all_steps
            dream_s[row] += time.perf_counter() - t0
            if report.status != "ok":
                raise RuntimeError(f"dream for {row} on day {day}: {report.render()}")
        if day % 15 == 14:
            log(f"  seed {history.seed}: day {day + 1} of {history.days}")
    clock.set(START + timedelta(days=history.days, hours=12))
    out: dict[str, RowResult] = {}
    pool = app.db.pool
    for row in rows:
        scope = scope_of(history.seed, row)
        hits: dict[str, list[bool]] = {c: [] for c in CATEGORIES}
        fact_hits: dict[str, list[bool]] = {c: [] for c in CATEGORIES}
        for q in history.questions:
            [bundle] = await app.brain.contexts([(q.question, scope)], k=K, author_id=ASKER)
            items = _memory_items(bundle)
            recall, fact = _hit(items, q, 0)
            if verbose and not fact:
                print(
                    f"    miss [{row}] {q.category} {q.question} -> {q.answer}: "
                    + " | ".join(f"{i.kind}:{i.text[:40]}" for i in items),
                    file=sys.stderr,
                )
            hits[q.category].append(recall)
            fact_hits[q.category].append(fact)
        out[row] = RowResult(
            hits,
            fact_hits,
            episodes=await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = $1", scope),
            facts=await pool.fetchval("SELECT count(*) FROM kg_edges WHERE scope = $1", scope),
            bot_facts=await pool.fetchval(
                """SELECT count(DISTINCT e.id) FROM kg_edges e JOIN kg_edge_sources s ON s.edge_id = e.id
                   JOIN messages m ON m.id = s.message_id WHERE e.scope = $1 AND m.is_bot""",
                scope,
            ),
            messages=await pool.fetchval("SELECT count(*) FROM messages WHERE scope = $1", scope),
            dream_s=dream_s[row],
        )
    return out


def _memory_items(bundle) -> list:
    """The recalled memories in bundle.items() order (the recent-turns transcript and the preamble left out)."""
    from dataclasses import replace

    from memory.layers.base import MEMORY

    return replace(bundle, sections=tuple(s for s in bundle.sections if s.placement == MEMORY)).items()


class SettableClock:
    """The simulated "now" the app's memory reads (absorption, recall), set by the replay."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when


def merge(results: Sequence[dict[str, RowResult]]) -> dict[str, RowResult]:
    out: dict[str, RowResult] = {}
    for row in results[0]:
        parts = [r[row] for r in results]
        out[row] = RowResult(
            {c: [h for p in parts for h in p.hits[c]] for c in CATEGORIES},
            {c: [h for p in parts for h in p.fact_hits[c]] for c in CATEGORIES},
            sum(p.episodes for p in parts),
            sum(p.facts for p in parts),
            sum(p.bot_facts for p in parts),
            sum(p.messages for p in parts),
            sum(p.dream_s for p in parts),
        )
    return out


def _rate(values: list[bool]) -> str:
    return f"{sum(values) / len(values):.3f}" if values else "-"


def print_table(split: str, seeds: Sequence[int], rows: dict[str, RowResult], days: int) -> None:
    n = {c: len(next(iter(rows.values())).hits[c]) for c in CATEGORIES}
    print(
        f"\ndream over months (split {split}, seeds {', '.join(map(str, seeds))}; {days} days, nightly dream; "
        f"recall (k={K}) at day {days + 1}; questions: " + ", ".join(f"{c} {n[c]}" for c in CATEGORIES) + ")"
    )
    print(
        "| row | recall repeated | fact repeated | recall confirmed | fact confirmed | recall once | "
        "fact once | contradicted: newest wins | fact newest | episodes | facts | bot facts | dream s |"
    )
    print("|---|" + "---|" * 12)
    for name, r in rows.items():
        cells = []
        for c in CATEGORIES:
            cells += [_rate(r.hits[c]), _rate(r.fact_hits[c])]
        print(f"| {name} | " + " | ".join(cells) + f" | {r.episodes} | {r.facts} | {r.bot_facts} | {r.dream_s:.0f} |")
    base = rows.get("no dream")
    if base is not None and "dream" in rows:
        d = rows["dream"]
        print(
            f"episodes kept with the dream: {d.episodes} of {base.episodes} without "
            f"({d.episodes / max(base.episodes, 1):.2f}); messages in the log: {d.messages}"
        )


async def run(args: argparse.Namespace) -> dict[str, RowResult]:
    from bench.evallib import scratch_database
    from bot.app import App
    from bot.config import Settings, offline_environment
    from memory.embed import MiniLMEmbedder

    offline_environment()
    seeds = args.seeds or (DEV_SEEDS if args.split == "dev" else HELDOUT_SEEDS)
    rows = args.rows or list(ROWS)
    clock = SettableClock(START)
    embedder = MiniLMEmbedder()
    embedder.load()
    results = []
    async with scratch_database(args.database_url, "months") as url:
        settings = Settings(
            _env_file=None, data_dir=Path(tempfile.mkdtemp(prefix="hippobot-months-")), database_url=url
        )
        app = await App.open(settings, with_llm=False, embedder=embedder, clock=clock)
        try:
            work = Path(tempfile.mkdtemp(prefix="hippobot-months-days-"))
            for seed in seeds:
                history = generate(seed, days=args.days)
                t0 = time.perf_counter()
                results.append(
                    await run_history(
                        app, clock, history, rows, work, log=lambda s: print(s, file=sys.stderr), verbose=args.verbose
                    )
                )
                print(
                    f"  seed {seed}: {len(history.messages)} messages, {len(history.questions)} questions, "
                    f"{time.perf_counter() - t0:.0f} s",
                    file=sys.stderr,
                )
        finally:
            await app.close()
    merged = merge(results)
    print_table(args.split if not args.seeds else "custom", seeds, merged, args.days)
    return merged


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--split", choices=("dev", "heldout"), default="dev")
    p.add_argument("--seeds", type=int, nargs="*", default=None, help="these seeds instead of the split's")
    p.add_argument("--rows", nargs="*", choices=list(ROWS), default=None)
    p.add_argument("--days", type=int, default=92)
    p.add_argument("--verbose", action="store_true", help="print each question the graph did not answer")
    p.add_argument("--database-url", default=None, help="admin URL of a server; default: embedded, throwaway")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    asyncio.run(run(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
