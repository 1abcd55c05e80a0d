"""Train the persona scorer's direction probe (memory/persona/direction_probe.npz) on the seen persona splits.

    .venv/bin/python -m bench.train_direction            # train on every seen split, print leave-one-split-out
    .venv/bin/python -m bench.train_direction --check    # only the leave-one-split-out table, write nothing
    .venv/bin/python -m bench.train_direction --exclude seen6   # a probe that has never seen seen6

The probe is a logistic regression on the MiniLM vector of an evidence message with its topic replaced by
"this policy": does the message argue that the topic is good (+1) or bad (-1)? The stance lexicon in
memory/persona/evidence.py reads words; the probe reads the sentence as a whole, which helps where the
lexicon finds nothing to count (arguments by analogy, concessions, "what would happen without it").
The scorer adds ``PROBE_WEIGHT`` times its logit to the lexicon's total.

Training data: every evidence template of the seen splits (bench/persona_eval.py's dev, seen, seen2 and the
seen*.json files), filled in for every topic of its split, labelled with the template's direction. The
held-out split (``persona_eval.FILES["heldout"]``) is never read. Leave-one-split-out accuracy (train on the
other splits, test on one, per message, probe alone) is printed so that a change can be judged without
touching the held-out split.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from bench import persona_eval as pe
from bot.config import offline_environment
from memory.persona.evidence import PROBE_FILE, PROBE_MASK

C = 0.3  # inverse L2 strength: the best of 0.3 / 1 / 3 leaving out seen3, seen4 and seen5 in turn
TOPIC_FILLS = 12  # topics per template (each split has 12 or fewer)


def seen_splits() -> list[str]:
    return ["dev", "seen", "seen2", *sorted(s for s in pe.FILES if s != "heldout")]


def examples(split: str, seed: int = 3) -> tuple[list[str], list[int], list[str]]:
    """(masked texts, directions, kinds) of one split's evidence templates, each filled in per topic."""
    topics, evidence, kinds, _ = pe.load_split(split)
    rng = random.Random(f"{split}-{seed}")
    texts, labels, kind_of = [], [], []
    for direction, templates in evidence.items():
        for i, template in enumerate(templates):
            for topic in sorted(topics)[:TOPIC_FILLS]:
                good, bad = topics[topic]
                texts.append(template.format(
                    t=PROBE_MASK, T=PROBE_MASK[0].upper() + PROBE_MASK[1:], g=rng.choice(good), b=rng.choice(bad),
                    adj=rng.choice(pe.ADJ[direction]), year=rng.randint(2012, 2024),
                    n=f"{rng.randint(2, 90) * 100:,}", pop=rng.choice(pe.POPS), pct=rng.randint(6, 41),
                    k=rng.randint(3, 30), uni=rng.choice(pe.UNIS), name=rng.choice(pe.NAMES)))
                labels.append(int(direction))
                kind_of.append(kinds[direction][i])
    return texts, labels, kind_of


async def embed(texts: list[str]) -> np.ndarray:
    from memory.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.load()
    return np.asarray(await embedder.embed_many(texts), dtype=np.float32)


def fit(x: np.ndarray, y: np.ndarray):  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LogisticRegression  # sentence-transformers' dependency

    return LogisticRegression(C=C, max_iter=5000).fit(x, y)


async def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="print the leave-one-split-out table only")
    p.add_argument("--out", type=Path, default=PROBE_FILE)
    p.add_argument("--exclude", nargs="*", default=[],
                   help="seen splits to leave out of training (to test the probe on one through persona_eval)")
    args = p.parse_args(argv)
    offline_environment()
    splits = [s for s in seen_splits() if s not in args.exclude]
    data = {}
    for split in splits:
        texts, labels, kinds = examples(split)
        data[split] = (await embed(texts), np.array(labels), np.array(kinds))
    print("leave-one-split-out, per message, probe alone (C = %g):" % C)
    print("| left out | n | right direction | figures | expert | argument |")
    print("|---|---|---|---|---|---|")
    for held in splits:
        x = np.concatenate([data[s][0] for s in splits if s != held])
        y = np.concatenate([data[s][1] for s in splits if s != held])
        model = fit(x, y)
        pred = model.predict(data[held][0])
        truth, kinds = data[held][1], data[held][2]
        by_kind = [float((pred[kinds == k] == truth[kinds == k]).mean()) if (kinds == k).any() else float("nan")
                   for k in ("figures", "expert", "argument")]
        print(f"| {held} | {len(truth)} | {float((pred == truth).mean()):.3f} | "
              + " | ".join(f"{v:.2f}" for v in by_kind) + " |")
    if args.check:
        return 0
    x = np.concatenate([data[s][0] for s in splits])
    y = np.concatenate([data[s][1] for s in splits])
    model = fit(x, y)
    meta = {"splits": splits, "examples": int(len(y)), "C": C, "mask": PROBE_MASK,
            "trained": datetime.now(timezone.utc).strftime("%Y-%m-%d")}
    np.savez(args.out, weights=model.coef_[0].astype(np.float32), bias=np.float32(model.intercept_[0]),
             meta=np.array(json.dumps(meta)))
    print(f"wrote {args.out} ({len(y)} examples from {', '.join(splits)}; training accuracy "
          f"{float((model.predict(x) == y).mean()):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
