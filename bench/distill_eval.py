"""Distillation evaluation (issue 12, item 2): what a nightly LoRA adapter puts into the model's weights.

    python bench/distill_eval.py                        # heldout split (conv-06..09), default settings
    python bench/distill_eval.py --split dev --conversations 2
    python bench/distill_eval.py --json bench/results/distill_heldout.json

Each conversation of the memory evaluation (bench/data/memory_eval/) is imported into its own scope through
`hippobot import`'s code; then, per scope, exactly what the dream's adapter_distillation step does: the weights
layer gathers the replay mix and its cloze questions, and bot.distill trains and evaluates a candidate with the
bot's default distillation settings (HIPPOBOT_DISTILL_* from the environment apply). Printed per conversation:
the mix, cloze exact match with no memory in the prompt (base model -> candidate), held-out perplexity (base ->
candidate), steps kept, training and total seconds, and whether it would be proposed.

--qa also asks the memory evaluation's questions of that conversation through the bot's own prompt and the
transformers engine, four ways: with no memory in the prompt or with what the bot recalls, each without and with
the adapter (the -distillation ablation): EM and the lenient 'contains' of the answers. The cloze questions test
what the mix taught in its own words; these test whether that knowledge answers a question put differently.

Defaults were chosen on conv-00 (dev); report heldout.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.evallib import (  # noqa: E402
    DATA_DIR,
    contains_match,
    exact_match,
    load_questions_in,
    scratch_database,
    select,
    write_json,
)
from bot.config import Settings, offline_environment  # noqa: E402

SPLITS = {"dev": [f"conv-0{i}" for i in range(6)], "heldout": [f"conv-0{i}" for i in range(6, 10)]}


async def run(args: argparse.Namespace) -> list[dict]:
    from bot.app import App, distiller
    from bot.llm import EngineConfig, TransformersLLM
    from bot.prompt import PromptBuilder
    from memory.layers.weights import AdapterRef, WeightsLayer

    convs = SPLITS[args.split][: args.conversations]
    questions = [q for q in select(load_questions_in(args.data), args.split) if q.conv in convs]
    rows: list[dict] = []
    async with scratch_database(args.database_url, "distilleval") as url:
        data_dir = Path(tempfile.mkdtemp(prefix="hippobot-distilleval-"))
        settings = Settings(data_dir=data_dir, database_url=url, distill_enabled=True)
        app = await App.open(settings, with_llm=False)
        llm = builder = None
        try:
            weights = app.brain.layer("weights")
            trainer = distiller(settings, None)
            assert isinstance(weights, WeightsLayer) and trainer is not None  # distill_enabled: both exist
            weights.trainer = trainer
            for conv in convs:
                t0 = time.perf_counter()
                await app.importer.run(args.data / f"{conv}.jsonl", conv)
                print(f"  imported {conv} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            if args.qa:
                llm = await asyncio.to_thread(
                    TransformersLLM.load,
                    EngineConfig(
                        cache_dir=settings.model_cache_dir,
                        max_new_tokens=args.qa_tokens,
                        temperature=0.0,
                        progress=False,
                    ),
                )
                builder = PromptBuilder(
                    bot_name=settings.bot_name,
                    persona=settings.persona,
                    budget_tokens=settings.context_tokens - args.qa_tokens,
                    count_tokens=llm.count_tokens,
                )
            for conv in convs:
                texts, cloze = await weights.replay_mix(conv, datetime.now(UTC))
                out = data_dir / "adapters" / conv
                t0 = time.perf_counter()
                outcome = await asyncio.to_thread(trainer.distill, texts, cloze, None, out)
                m = dict(
                    outcome.metrics,
                    conv=conv,
                    passed=outcome.passed,
                    reason=outcome.reason,
                    total_s=round(time.perf_counter() - t0, 1),
                    mix={k: sum(t.kind == k for t in texts) for k in ("episode", "fact", "turn")},
                )
                if llm is not None:
                    m["qa"] = await ask(
                        app,
                        llm,
                        builder,
                        [q for q in questions if q.conv == conv][: args.qa_limit],
                        AdapterRef(len(rows) + 1, out),
                    )
                rows.append(m)
                print(f"  {conv}: {outcome.reason} in {m['total_s']} s", file=sys.stderr)
        finally:
            if llm is not None:
                llm.close()
            await app.close()
    return rows


async def ask(app, llm, builder, questions, adapter) -> dict:
    """Each question four ways: no memory or the recalled memory in the prompt (the bot's own prompt, with the
    weights layer's section left out), each without and with the adapter."""
    from dataclasses import replace

    from memory.archetypes import ContextPlan
    from memory.recall import ContextBundle

    scores: dict[str, list[float]] = {}
    for q in questions:
        empty = ContextBundle(scope=q.conv, plan=ContextPlan(None, 0.0, 0, 0, 1.0, 0), sections=())
        recalled = await app.brain.context(q.question, q.conv, author_id="console:distilleval")
        recalled = replace(
            recalled, sections=tuple(s for s in recalled.sections if s.layer not in ("turns", "weights"))
        )
        for memory, bundle in (("none", empty), ("memory", recalled)):
            prompt = builder.build(bundle, "asker", q.question)
            for name, ref in (("base", None), ("adapter", adapter)):
                gen = llm.generate(prompt.text, stop=prompt.stop, stop_pattern=prompt.stop_pattern, adapter=ref)
                reply = (await gen.complete()).strip().split("\n")[0]
                scores.setdefault(f"{memory}_{name}_em", []).append(exact_match(reply, q.answer))
                scores.setdefault(f"{memory}_{name}_contains", []).append(contains_match(reply, q.answer))
    return {"n": len(questions), **{k: statistics.fmean(v) if v else 0.0 for k, v in scores.items()}}


def print_table(rows: Sequence[dict]) -> None:
    head = [
        "conv",
        "episodes / facts / turns",
        "questions",
        "EM base -> adapter",
        "ΔEM",
        "perplexity base -> adapter",
        "steps",
        "train s",
        "total s",
        "proposed",
    ]
    if any("qa" in r for r in rows):
        head[-1:-1] = ["QA no memory: EM / contains, base -> adapter", "QA with memory: EM / contains, base -> adapter"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        mix = r["mix"]
        cells = [
            r["conv"],
            f"{mix['episode']} / {mix['fact']} / {mix['turn']}",
            str(r["questions"]),
            f"{r['em_base']:.2f} -> {r['em_candidate']:.2f}",
            f"{r['em_candidate'] - r['em_base']:+.2f}",
            f"{r['ppl_base']:.1f} -> {r['ppl_candidate']:.1f} (x{r['ppl_ratio']:.2f})",
            str(r["steps"]),
            f"{r['train_s']:.0f}",
            f"{r['total_s']:.0f}",
            "yes" if r["passed"] else "no",
        ]
        if "qa" in r:
            qa = r["qa"]
            cells[-1:-1] = [
                f"{qa[f'{m}_base_em']:.2f} / {qa[f'{m}_base_contains']:.2f} -> "
                f"{qa[f'{m}_adapter_em']:.2f} / {qa[f'{m}_adapter_contains']:.2f} ({qa['n']})"
                for m in ("none", "memory")
            ]
        print("| " + " | ".join(cells) + " |")
    qa = [r["qa"] for r in rows if "qa" in r]
    if qa:
        n = sum(q["n"] for q in qa)

        def pooled(key: str) -> float:
            return sum(q[key] * q["n"] for q in qa) / max(n, 1)

        print("\nquestions pooled (n = %d): EM / contains" % n)
        for m, label in (("none", "no memory"), ("memory", "with memory")):
            print(
                f"  {label:>11}: base {pooled(f'{m}_base_em'):.3f} / {pooled(f'{m}_base_contains'):.3f}, "
                f"adapter {pooled(f'{m}_adapter_em'):.3f} / {pooled(f'{m}_adapter_contains'):.3f}"
            )
    if rows:
        gain = statistics.fmean(r["em_candidate"] - r["em_base"] for r in rows)
        ratio = statistics.fmean(r["ppl_ratio"] for r in rows)
        print(
            f"\nmean ΔEM {gain:+.3f}, mean perplexity ratio x{ratio:.3f}, "
            f"proposed {sum(r['passed'] for r in rows)} of {len(rows)}, "
            f"mean total {statistics.fmean(r['total_s'] for r in rows):.0f} s per scope"
        )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--split", choices=sorted(SPLITS), default="heldout")
    p.add_argument("--data", type=Path, default=DATA_DIR)
    p.add_argument("--conversations", type=int, default=None, help="only the first N conversations of the split")
    p.add_argument("--database-url", default=None, help="admin URL of a server; default: embedded, throwaway")
    p.add_argument(
        "--qa",
        action="store_true",
        help="also ask the evaluation's questions four ways: without and with "
        "recalled memory, each without and with the adapter",
    )
    p.add_argument("--qa-limit", type=int, default=20, help="questions per conversation for --qa")
    p.add_argument("--qa-tokens", type=int, default=24)
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    offline_environment()
    started = time.perf_counter()
    rows = asyncio.run(run(args))
    print(
        f"\ndistillation, {args.split} split, {len(rows)} conversation(s), "
        f"{time.perf_counter() - started:.0f} s in all\n"
    )
    print_table(rows)
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
