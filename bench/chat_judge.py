"""Ordinary chat turns, base model against the reader (issue 28 (c)): pairs for a blind judge, then the count.

    python -m bench.chat_judge make  [--n 100] [--out bench/results/chat_judge]
    python -m bench.chat_judge score [--out bench/results/chat_judge]

``make`` takes ``--n`` turns at random (seed 28) from the held-out hand-written conversations
(bench/data/memory_eval_natural conv-n02, conv-n03: never trained on, never tuned on), lays each out as the
bot would (the persona, the last up to 6 turns as the conversation, the person's line, no memories) and has
the bundled model answer it twice, without and with the reader adapter (llama.cpp, the default engine), with
the bot's own sampling settings (temperature, top-p, repetition penalty; seeded, so a run repeats): what a
person in the chat would read. ``--greedy`` decodes greedily instead (how v1 and v2 were first judged; greedy
decoding also leaves out the repetition penalty, and the bot never replies that way). It writes
``pairs.jsonl`` (context, message, reply A, reply B; which is which drawn at random per pair) for the judge, and ``key.json`` (which side is the reader) for ``score``. BRIEF below is all the judge
is given besides the pairs. ``score`` reads the judge's ``verdicts.jsonl`` (``{"id", "better": "A"|"B"|"tie"}``)
and prints how often each side was preferred.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.evallib import load_conversation  # noqa: E402
from bot.config import Settings, offline_environment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "memory_eval_natural"
OUT = ROOT / "bench" / "results" / "chat_judge"
CONVERSATIONS = ("conv-n02", "conv-n03")
SEED = 28
BRIEF = """You judge replies of a chat bot called hippobot that takes part in a group chat between friends.
For each item you see the conversation so far, the latest message (addressed to the bot), and two candidate
replies, A and B. Decide which reply is better as the bot's next message: short, on topic (it answers or
follows up what was just said), coherent and natural English, not repeating itself, not inventing a
conversation with other speakers, not rambling. If both are equally good or equally bad, say "tie". Judge
each item on its own. Answer with one JSON object per line: {"id": <id>, "better": "A" | "B" | "tie"}."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("make", "score"))
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--tokens", type=int, default=48)
    p.add_argument("--greedy", action="store_true", help="greedy decoding instead of the bot's sampling")
    return p.parse_args(argv)


def picks(n: int) -> list[tuple[list[tuple[str, str]], tuple[str, str]]]:
    """(up to 6 earlier turns, the turn to answer) for ``n`` turns drawn at random from the held-out chats."""
    rng = random.Random(SEED)
    spots = []
    for conv in CONVERSATIONS:
        turns = [(t.speaker, t.text) for t in load_conversation(DATA / f"{conv}.jsonl")]
        spots += [(turns, i) for i in range(2, len(turns))]
    chosen = rng.sample(spots, n)
    return [(turns[max(0, i - 6) : i], turns[i]) for turns, i in chosen]


async def make(args: argparse.Namespace) -> int:
    from bot.app import engine_config, prompt_builder
    from bot.engines import load_engine
    from memory.archetypes import ContextPlan
    from memory.layers.base import TRANSCRIPT, MemoryItem, Section
    from memory.recall import ContextBundle

    plan = ContextPlan(archetype=None, similarity=0.0, turns=8, vectors=5, similarity_threshold=0.9, triple_depth=1)
    items = picks(args.n)
    replies: dict[str, list[str]] = {}
    for reader in ("off", "on"):
        decoding: dict[str, Any] = {"temperature": 0.0} if args.greedy else {"seed": SEED}
        settings = Settings(_env_file=None, reader=reader == "on", max_new_tokens=args.tokens, **decoding)
        llm = await asyncio.to_thread(load_engine, settings, engine_config(settings, progress=False))
        builder = prompt_builder(settings, llm)
        out = []
        try:
            for history, (speaker, text) in items:
                lines = tuple(MemoryItem("turn", None, f"{a}: {b}", f"{a}: {b}", ()) for a, b in history)
                bundle = ContextBundle(
                    scope="judge", plan=plan, sections=(Section("turns", "Conversation", lines, placement=TRANSCRIPT),)
                )
                prompt = builder.build(bundle, speaker, text)
                gen = llm.generate(prompt.text, stop=prompt.stop, stop_pattern=prompt.stop_pattern)
                out.append(" ".join((await gen.complete()).split()))
                print(f"  reader={reader} {len(out)}/{len(items)}", file=sys.stderr)
        finally:
            llm.close()
        replies[reader] = out
    rng = random.Random(SEED + 1)
    args.out.mkdir(parents=True, exist_ok=True)
    key = {}
    with open(args.out / "pairs.jsonl", "w", encoding="utf-8") as f:
        for n, ((history, (speaker, text)), base, reader) in enumerate(zip(items, replies["off"], replies["on"])):
            reader_is = rng.choice("AB")
            a, b = (reader, base) if reader_is == "A" else (base, reader)
            key[n] = reader_is
            f.write(
                json.dumps(
                    {
                        "id": n,
                        "conversation": [f"{s}: {t}" for s, t in history],
                        "message": f"{speaker}: {text}",
                        "A": a,
                        "B": b,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    (args.out / "key.json").write_text(json.dumps(key) + "\n")
    (args.out / "brief.txt").write_text(BRIEF + "\n")
    print(f"wrote {len(items)} pairs to {args.out / 'pairs.jsonl'}", file=sys.stderr)
    return 0


def score(args: argparse.Namespace) -> int:
    key = {int(k): v for k, v in json.loads((args.out / "key.json").read_text()).items()}
    counts = {"reader": 0, "base": 0, "tie": 0}
    for line in (args.out / "verdicts.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        v = json.loads(line)
        better = v["better"]
        counts["tie" if better == "tie" else "reader" if better == key[int(v["id"])] else "base"] += 1
    total = sum(counts.values())
    decided = counts["reader"] + counts["base"]
    print("| judged | reader preferred | base preferred | tie | reader share (all) | reader share (decided) |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {total} | {counts['reader']} | {counts['base']} | {counts['tie']} | "
        f"{counts['reader'] / max(total, 1):.2f} | {counts['reader'] / max(decided, 1):.2f} |"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    offline_environment()
    if args.action == "make":
        return asyncio.run(make(args))
    return score(args)


if __name__ == "__main__":
    raise SystemExit(main())
