"""Per-archetype similarity thresholds, calibrated on the memory evaluation's dev split.

    python bench/calibrate_thresholds.py                    # both data sets' dev split
    python bench/calibrate_thresholds.py --json bench/results/thresholds.json

An archetype's ``similarity_threshold`` decides which recalled episodes are
kept beyond the few best of each list (see EpisodesLayer's ``keep_top``):
too low and the prompt fills with loosely related turns, too high and
answers are cut. This imports the dev conversations of both data sets
(bench/data/memory_eval and bench/data/memory_eval_natural) through
`hippobot import`'s code, then for every candidate threshold T sets every
archetype to T and asks all dev questions through `recall --queries`'s
code (k = 10), and prints per archetype that the questions route to:
recall_any@10 of the answerable questions and mean words kept for the
adversarial ones (nothing to find: fewer is better), at each T.

The chosen threshold of an archetype is the highest T whose recall_any@10 is
within --tolerance of the best T's (the same recall from fewer, surer
memories); archetypes with fewer than --min-questions answerable questions
keep their seeded value. sql/013_calibrated_thresholds.sql records the
values chosen. The held-out split is never read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.evallib import DATA_DIR, hits_at, load_questions_in, scratch_database, select, write_json  # noqa: E402
from bench.memory_eval import AUTHOR, _answered, ranked_items  # noqa: E402
from bot.config import Settings, offline_environment  # noqa: E402

DATA_SETS = (DATA_DIR, DATA_DIR.parent / "memory_eval_natural")
GRID = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)  # the CHECK of context_archetypes allows 0.5-0.9
K = 10
DEFAULT = "(no archetype)"  # messages no archetype matches: the default plan, HIPPOBOT_DEFAULT_SIMILARITY_THRESHOLD


def choose(results: dict[float, tuple[float, float, float]], tolerance: float) -> float:
    """The highest threshold whose recall is within ``tolerance`` of the best; results: T -> (hits, n, words)."""
    recall = {t: hits / n for t, (hits, n, _) in results.items()}
    best = max(recall.values())
    return max(t for t, r in recall.items() if r >= best - tolerance)


async def run(args: argparse.Namespace) -> dict:
    from bot.app import App
    from memory.embed import MiniLMEmbedder

    per_set = {data: select(load_questions_in(data), "dev", None) for data in args.data}
    questions = [q for qs in per_set.values() for q in qs]
    sources = {q.conv: data for data, qs in per_set.items() for q in qs}
    embedder = MiniLMEmbedder()
    embedder.load()
    # per threshold, per archetype: [hits@10, answerable n, adversarial words, adversarial n]
    table: dict[float, dict[str, list[float]]] = {}
    async with scratch_database(args.database_url, "calib") as url:
        settings = Settings(_env_file=None, data_dir=Path(tempfile.mkdtemp(prefix="hippobot-calib-")), database_url=url)
        app = await App.open(settings, with_llm=False, embedder=embedder)
        try:
            seeded = {
                r["archetype_name"]: r["similarity_threshold"]
                for r in await app.db.pool.fetch(
                    "SELECT archetype_name, similarity_threshold FROM context_archetypes WHERE scope IS NULL"
                )
            }
            router = app.brain.archetypes
            default = router.default_plan
            seeded[DEFAULT] = default.similarity_threshold
            for conv, data in sorted(sources.items()):
                report = await app.importer.run(data / f"{conv}.jsonl", conv)
                print(f"  imported {conv}: {report}", file=sys.stderr)
            for t in GRID:
                await app.db.pool.execute("UPDATE context_archetypes SET similarity_threshold = $1", t)
                router.default_plan = replace(default, similarity_threshold=t)
                await router.refresh()
                bundles = await app.brain.contexts([(q.question, q.conv) for q in questions], k=K, author_id=AUTHOR)
                cells: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0])
                for q, bundle in zip(questions, bundles):
                    a = _answered(q, ranked_items(bundle, with_transcript=False), None, bundle)
                    cell = cells[bundle.plan.archetype or DEFAULT]
                    if q.category == "adversarial":
                        cell[2] += a.words_top10
                        cell[3] += 1
                    else:
                        cell[0] += hits_at(a.ranked, q.evidence, K)[0]
                        cell[1] += 1
                table[t] = dict(cells)
                print(f"  threshold {t:.2f}: done", file=sys.stderr)
        finally:
            await app.close()
    names = sorted({name for cells in table.values() for name in cells})
    chosen: dict[str, dict] = {}
    print(
        f"\nrecall_any@{K} of answerable dev questions / mean words kept for adversarial ones, "
        "every archetype at threshold T"
    )
    print("| archetype | answerable | adversarial | " + " | ".join(f"T={t:.2f}" for t in GRID) + " | seeded | chosen |")
    print("|" + "---|" * (len(GRID) + 5))
    for name in names:
        n = int(table[GRID[0]].get(name, [0, 0, 0, 0])[1])
        n_adv = int(table[GRID[0]].get(name, [0, 0, 0, 0])[3])
        row: list[str] = []
        for t in GRID:
            hits, m, words, m_adv = table[t].get(name, [0, 0, 0.0, 0])
            row.append((f"{hits / m:.3f}" if m else "-") + (f" / {words / m_adv:.0f}" if m_adv else ""))
        results = {t: (table[t][name][0], table[t][name][1], 0.0) for t in GRID if table[t].get(name, [0, 0])[1]}
        seed = seeded.get(name)
        pick = choose(results, args.tolerance) if n >= args.min_questions else seed
        chosen[name] = {
            "answerable": n,
            "adversarial": n_adv,
            "seeded": seed,
            "chosen": pick,
            "recall": {str(t): table[t].get(name, [0, 0])[0] / max(table[t].get(name, [0, 1])[1], 1) for t in GRID},
        }
        print(
            f"| {name} | {n} | {n_adv} | "
            + " | ".join(row)
            + f" | {seed if seed is not None else '-'} | {pick if pick is not None else '-'} |"
        )
    print(
        f"\nchosen: the highest T within {args.tolerance} of the archetype's best recall "
        f"(archetypes with under {args.min_questions} answerable questions keep the seeded value)"
    )
    return {"grid": list(GRID), "k": K, "tolerance": args.tolerance, "archetypes": chosen}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, nargs="+", default=list(DATA_SETS), help="evaluation data sets (dev split)")
    p.add_argument("--tolerance", type=float, default=0.01)
    p.add_argument("--min-questions", type=int, default=15)
    p.add_argument("--database-url", help="admin URL of a PostgreSQL with pgvector (default: embedded)")
    p.add_argument("--json", type=Path, help="also write the results here")
    return p.parse_args(argv)


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    offline_environment()
    try:
        missing = [str(d) for d in args.data if not select(load_questions_in(d), "dev", None)]
    except (OSError, ValueError, KeyError) as exc:  # a missing, unreadable or malformed data set
        print(f"calibrate_thresholds: {exc!r}", file=sys.stderr)
        return 2
    if missing:
        print(f"calibrate_thresholds: no dev questions in {', '.join(missing)}", file=sys.stderr)
        return 2
    result = await run(args)
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
