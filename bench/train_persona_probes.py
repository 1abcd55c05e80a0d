"""Train the persona scorer's two probes (memory/persona/probes.npz) on the seen persona splits.

    .venv/bin/python -m bench.train_persona_probes                  # train on every seen split, print LOSO tables
    .venv/bin/python -m bench.train_persona_probes --check          # only the leave-one-split-out tables
    .venv/bin/python -m bench.train_persona_probes --exclude seen7  # probes that have never seen seen7

Both are logistic regressions on MiniLM sentence vectors, read by memory/persona/evidence.py:

- **direction**: the message with its topic replaced by "this policy" -> does it argue that the topic is good
  (+1) or bad (-1)? The stance lexicon reads words; the probe reads the sentence as a whole, which helps where
  the lexicon finds nothing to count (analogies, concessions, "what would happen without it"). The scorer
  adds ``PROBE_WEIGHT`` times its logit to the lexicon's total.
- **argument**: the message as written -> is it evidence (figures, an expert's finding or a reasoned
  argument) rather than pressure, an anecdote, a feeling or chat? Prototype similarity and cue counts miss
  many arguments that carry no connective or number; where the probe's probability reaches
  ``ARGUMENT_PROBABILITY`` and no pressure or insult cue fires, the scorer counts the message as an argument
  (``ARGUMENT_FLOOR``).

Training data: every evidence template of the seen splits (bench/persona_eval.py's dev, seen, seen2 and the
seen*.json files), filled in for their split's topics; for the argument probe, also every pressure template
(negatives), the scorer's prototypes of pressure, feelings, anecdotes and small talk, and chat lines from the
memory evaluation's dev conversations (negatives: ordinary talk must not count as evidence). The held-out
split (``persona_eval.FILES["heldout"]``) is never read. Leave-one-split-out tables (train on the other
splits, test on one, per message) let a change be judged without touching the held-out split.
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
from bench.evallib import load_conversation
from bot.config import offline_environment
from memory.persona.evidence import ARGUMENT_PROBABILITY, PROBE_FILE, PROBE_MASK, PROTOTYPES
from memory.persona.state import ANECDOTAL, EMOTIONAL, NO_ARGUMENT, SOCIAL

DIRECTION_C = 0.3  # inverse L2 strength: the best of 0.3 / 1 / 3 leaving out seen3, seen4 and seen5 in turn
ARGUMENT_C = 1.0  # the better of 0.3 / 1 leaving out each seen split in turn
TOPIC_FILLS = 12  # topics per template (each split has 12 or fewer)
CHAT = Path(__file__).resolve().parent / "data" / "memory_eval"
CHAT_CONVERSATIONS = ("conv-00", "conv-01", "conv-02")  # dev conversations only (heldout: conv-06..09)


def seen_splits() -> list[str]:
    return [s for s in pe.SPLITS if s != "heldout"]


def examples(split: str, seed: int = 3, fills: int = TOPIC_FILLS) -> list[dict]:
    """One row per template and topic: the text as said, the text with the topic masked, its label and kind
    (figures / expert / argument, or the pressure tactic)."""
    topics, evidence, kinds, pressure = pe.load_split(split)
    rng = random.Random(f"{split}-{seed}")
    rows = []

    def fill(template: str, topic: str, direction: int, shown: str) -> str:
        good, bad = topics[topic]
        return template.format(
            t=shown,
            T=shown[0].upper() + shown[1:],
            g=rng.choice(good),
            b=rng.choice(bad),
            adj=rng.choice(pe.ADJ[direction]),
            year=rng.randint(2012, 2024),
            n=f"{rng.randint(2, 90) * 100:,}",
            pop=rng.choice(pe.POPS),
            pct=rng.randint(6, 41),
            k=rng.randint(3, 30),
            uni=rng.choice(pe.UNIS),
            name=rng.choice(pe.NAMES),
        )

    for direction, templates in evidence.items():
        for i, template in enumerate(templates):
            names = sorted(topics)
            chosen = names[:fills] if fills >= len(names) else [names[(i + j) % len(names)] for j in range(fills)]
            for topic in chosen:  # fewer than all: each template its own topics, so every outcome phrase is used
                state = rng.getstate()
                text = fill(template, topic, direction, topic)
                rng.setstate(state)  # the same figures and outcomes in both
                rows.append(
                    {
                        "text": text,
                        "masked": fill(template, topic, direction, PROBE_MASK),
                        "direction": int(direction),
                        "evidence": 1,
                        "kind": kinds[direction][i],
                    }
                )
    for tactic, templates in pressure.items():
        for template in templates:
            for topic in sorted(topics)[: TOPIC_FILLS // 2]:
                direction = rng.choice((1, -1))
                rows.append({"text": fill(template, topic, direction, topic), "evidence": 0, "kind": tactic})
    return rows


def other_talk() -> list[str]:
    """Negatives for the argument probe that no split holds: prototypes and ordinary chat."""
    texts = [t for k in (SOCIAL, EMOTIONAL, NO_ARGUMENT, ANECDOTAL) for t in PROTOTYPES[k]] + list(pe.FILLER)
    for conv in CHAT_CONVERSATIONS:
        texts += [turn.text for turn in load_conversation(CHAT / f"{conv}.jsonl")]
    return list(dict.fromkeys(texts))


async def embed(texts: list[str]) -> np.ndarray:
    from memory.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.load()
    return np.asarray(await embedder.embed_many(texts), dtype=np.float32)


def fit(x: np.ndarray, y: np.ndarray, c: float, *, balanced: bool = False):
    from sklearn.linear_model import LogisticRegression  # sentence-transformers' dependency

    return LogisticRegression(C=c, max_iter=5000, class_weight="balanced" if balanced else None).fit(x, y)


class Split:
    def __init__(self, rows: list[dict], text_vectors: np.ndarray, masked_vectors: np.ndarray) -> None:
        self.rows = rows
        ev = np.array([r["evidence"] == 1 for r in rows])
        self.ev = ev
        self.masked = masked_vectors
        self.text = text_vectors
        self.direction = np.array([r.get("direction", 0) for r in rows])[ev]
        self.kind = np.array([r["kind"] for r in rows])


async def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="print the leave-one-split-out tables only")
    p.add_argument("--out", type=Path, default=PROBE_FILE)
    p.add_argument(
        "--exclude",
        nargs="*",
        default=[],
        help="seen splits to leave out of training (to test the probes on one through persona_eval)",
    )
    args = p.parse_args(argv)
    offline_environment()
    splits = [s for s in seen_splits() if s not in args.exclude]
    data: dict[str, Split] = {}
    for split in splits:
        rows = examples(split)
        evidence_rows = [r for r in rows if r["evidence"]]
        data[split] = Split(
            rows, await embed([r["text"] for r in rows]), await embed([r["masked"] for r in evidence_rows])
        )
    talk = other_talk()
    talk_vectors = await embed(talk)

    def direction_xy(names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return (np.concatenate([data[s].masked for s in names]), np.concatenate([data[s].direction for s in names]))

    def argument_xy(names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        x = np.concatenate([data[s].text for s in names] + [talk_vectors])
        y = np.concatenate([data[s].ev.astype(int) for s in names] + [np.zeros(len(talk), dtype=int)])
        return x, y

    print(f"direction probe, leave-one-split-out, per evidence message (C = {DIRECTION_C}):")
    print("| left out | n | right direction | figures | expert | argument |")
    print("|---|---|---|---|---|---|")
    for held in splits:
        model = fit(*direction_xy([s for s in splits if s != held]), DIRECTION_C)
        d = data[held]
        pred = model.predict(d.masked)
        kinds = d.kind[d.ev]
        by_kind = [
            float((pred[kinds == k] == d.direction[kinds == k]).mean()) if (kinds == k).any() else float("nan")
            for k in ("figures", "expert", "argument")
        ]
        print(
            f"| {held} | {len(pred)} | {float((pred == d.direction).mean()):.3f} | "
            + " | ".join(f"{v:.2f}" for v in by_kind)
            + " |"
        )
    print(
        f"\nargument probe, leave-one-split-out (C = {ARGUMENT_C}, balanced; counted at probability >= "
        f"{ARGUMENT_PROBABILITY}): share of each kind counted as evidence"
    )
    print("| left out | figures | expert | argument | pressure |")
    print("|---|---|---|---|---|")
    for held in splits:
        model = fit(*argument_xy([s for s in splits if s != held]), ARGUMENT_C, balanced=True)
        d = data[held]
        hit = model.predict_proba(d.text)[:, 1] >= ARGUMENT_PROBABILITY
        share = [
            float(hit[d.kind == k].mean()) if (d.kind == k).any() else float("nan")
            for k in ("figures", "expert", "argument")
        ]
        print(f"| {held} | " + " | ".join(f"{v:.2f}" for v in share) + f" | {float(hit[~d.ev].mean()):.3f} |")
    if args.check:
        return 0
    direction = fit(*direction_xy(splits), DIRECTION_C)
    argument = fit(*argument_xy(splits), ARGUMENT_C, balanced=True)
    chat_counted = float((argument.predict_proba(talk_vectors)[:, 1] >= ARGUMENT_PROBABILITY).mean())
    meta = {
        "splits": splits,
        "direction_examples": int(sum(len(data[s].direction) for s in splits)),
        "argument_examples": int(sum(len(data[s].rows) for s in splits) + len(talk)),
        "mask": PROBE_MASK,
        "direction_C": DIRECTION_C,
        "argument_C": ARGUMENT_C,
        "trained": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }
    np.savez(
        args.out,
        weights=direction.coef_[0].astype(np.float32),
        bias=np.float32(direction.intercept_[0]),
        argument_weights=argument.coef_[0].astype(np.float32),
        argument_bias=np.float32(argument.intercept_[0]),
        meta=np.array(json.dumps(meta)),
    )
    print(f"\nwrote {args.out}: {json.dumps(meta)}; other talk counted as evidence in training: {chat_counted:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
