"""Triple extraction quality on the labelled chat sentences in tests/data/triples_gold.jsonl.

    python bench/extraction.py            # table of precision / recall / F1, then JSON
    python bench/extraction.py --errors   # also every miss and every spurious triple

A triple counts as asserted when its confidence is at least 0.5 (hedged and
sarcastic statements are extracted at lower confidence and the relational
gate routes them to episodic memory instead of the graph).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.extract import TripleExtractor  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
GOLD = DATA / "triples_gold.jsonl"  # 65 sentences; the extractor's rules were developed against these
HELD_OUT = DATA / "triples_heldout.jsonl"  # 20 sentences written before the extractor ever saw them
ASSERTED = 0.5


def evaluate(extractor: TripleExtractor, path: Path = GOLD) -> dict[str, Any]:
    tp = fp = fn = 0
    errors = []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        gold = {tuple(t) for t in row["triples"]}
        got = {(t.subject, t.relation, t.object) for t in extractor.extract(row["text"]) if t.confidence >= ASSERTED}
        tp += len(gold & got)
        fp += len(got - gold)
        fn += len(gold - got)
        if gold != got:
            errors.append({"text": row["text"], "missed": sorted(gold - got), "spurious": sorted(got - gold)})
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "sentences": len(rows),
        "gold_triples": tp + fn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true")
    args = parser.parse_args()
    extractor = TripleExtractor()
    results = {"development": evaluate(extractor, GOLD), "held_out": evaluate(extractor, HELD_OUT)}
    print(f"{'':<14}{'development':>14}{'held-out':>12}")
    for key in ("sentences", "gold_triples", "precision", "recall", "f1"):
        cells = [results["development"][key], results["held_out"][key]]
        fmt = "{:>14.3f}{:>12.3f}" if isinstance(cells[0], float) else "{:>14}{:>12}"
        print(f"{key:<14}" + fmt.format(*cells))
    if args.errors:
        for name, result in results.items():
            for e in result["errors"]:
                print(f"- [{name}] {e['text']}\n    missed {e['missed']}\n    spurious {e['spurious']}")
    print(json.dumps({n: {k: v for k, v in r.items() if k != "errors"} for n, r in results.items()}))


if __name__ == "__main__":
    main()
