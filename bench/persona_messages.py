"""Per-message direction through the whole persona scorer, by kind of evidence: where persona_eval's sequences
go wrong.

    .venv/bin/python -m bench.persona_messages --split seen12 [--split seen11 ...] [--fills 4] [--stance-model DIR] [--misses N]

Every evidence template of a split, filled in for ``--fills`` of its topics (bench/train_persona_probes.py's
``examples``, the same fills each run), scored by ``EvidenceScorer.score`` as the persona layer does. A message
counts as right when the topic it names is among the scorer's topics (the longest topic name of the split found
in the text, matched by substring) with the stated direction. Columns: right; right among the messages scoring
0.25 or more (the only ones that move a view); the stance lexicon's and the stance model's signs alone on that
topic; and how often the topic was not found at all. ``--misses N`` prints N wrong messages per split.

Never run it on the held-out split: that is persona_eval's, once.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bot.config import offline_environment


async def run(splits: Sequence[str], fills: int, stance_model: Path | None, misses: int) -> int:
    from bench import persona_eval as pe
    from bench.train_persona_probes import examples
    from memory.embed import MiniLMEmbedder
    from memory.persona.evidence import EvidenceScorer
    from memory.persona.stance import StanceModel

    embedder = MiniLMEmbedder()
    embedder.load()
    scorer = EvidenceScorer(embedder, stance=StanceModel(stance_model) if stance_model else None)
    print(
        "| split | kind | n | right | right, scoring >= 0.25 | lexicon alone | stance model alone | topic not found |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for split in splits:
        names = sorted(pe.load_split(split)[0], key=len, reverse=True)
        rows = [r for r in examples(split, fills=fills) if r["evidence"]]
        vectors = await embedder.embed_many([r["text"] for r in rows])
        counts: dict[str, Counter] = defaultdict(Counter)
        wrong: list[str] = []
        for row, vector in zip(rows, vectors):
            scored = await scorer.score(row["text"], np.asarray(vector))
            name = next((t for t in names if t.lower() in row["text"].lower()), None)
            found = [
                (t, d) for t, d in scored.topics if name and (name.lower() in t.lower() or t.lower() in name.lower())
            ]
            topic, got = found[0] if found else (None, 0)
            parts = scored.features["direction"].get(topic, {}) if topic else {}
            reader = parts.get("stance", parts.get("probe", 0.0))
            want = row["direction"]
            for c in (counts[row["kind"]], counts["all"]):
                c["n"] += 1
                c["right"] += got == want
                c["strong"] += scored.score >= 0.25
                c["right_strong"] += got == want and scored.score >= 0.25
                c["lexicon"] += int(np.sign(parts.get("lexicon", 0.0))) == want
                c["model"] += int(np.sign(reader)) == want
                c["missing"] += topic is None
            if got != want:
                wrong.append(
                    f"  {split} {row['kind']} want {want:+d} got {got:+d} topics "
                    f"{[t for t, _ in scored.topics]}: {row['text'][:160]}"
                )
        for kind in sorted(counts, key=lambda k: (k == "all", k)):
            c = counts[kind]
            print(
                f"| {split} | {kind} | {c['n']} | {c['right'] / c['n']:.2f} | "
                f"{c['right_strong'] / max(1, c['strong']):.2f} | {c['lexicon'] / c['n']:.2f} | "
                f"{c['model'] / c['n']:.2f} | {c['missing'] / c['n']:.2f} |"
            )
        if misses:
            for line in random.Random(split).sample(wrong, min(misses, len(wrong))):
                print(line, file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from bench.persona_eval import SPLITS, training_splits

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--split",
        action="append",
        required=True,
        choices=[s for s in SPLITS if s != "heldout"] + [s for s in training_splits() if s not in SPLITS],
    )
    p.add_argument("--fills", type=int, default=4, help="topics per template")
    p.add_argument("--stance-model", type=Path, help="a stance model directory (default: the shipped one)")
    p.add_argument("--misses", type=int, default=0, help="wrong messages to print per split (on stderr)")
    args = p.parse_args(argv)
    offline_environment()
    return asyncio.run(run(args.split, args.fills, args.stance_model, args.misses))


if __name__ == "__main__":
    sys.exit(main())
