"""How often the bot answers chat as if it were asked about memory: "I don't remember anyone telling me that." to
"what should I make for dinner tonight?" (issue 28 (c), P7).

    python -m bench.chat_declines [--split dev|heldout] [--bias 0 -2 -4] [--repeats 3] [--chat 40]

Each message is asked by a new person in an empty scope, through the bot's whole pipeline (`Brain.ask`, the
bundled model with the reader, the bot's own sampling, ``--repeats`` times each): the requests of
``bench/data/chat_requests/requests.jsonl`` (small talk, advice, opinions, statements; ``--split``) and
``--chat`` turns drawn (seed 28) from the held-out hand-written chats that `bench/chat_judge.py` uses. For each
``--bias`` (`Brain.chat_decline_bias`, the logit bias on the word that opens "I don't ...", for replies to
anything not about memory) it prints a table: how many messages the guard took for questions about memory,
the share of the others' replies that decline (open with "I don't know / remember / recall", "I'm not sure"),
the share that say nobody told the bot, the replies' mean length in words, the share the model opened by claiming
the person's experience ("Me too!", not shown: `bot.brain._OpenerFilter`) and the share that were nothing else
(shown as "Tell me more!"), and, per bias, a few replies to read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chat_judge import picks  # noqa: E402
from bench.evallib import scratch_database  # noqa: E402
from bot.config import Settings, offline_environment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = ROOT / "bench" / "data" / "chat_requests" / "requests.jsonl"
NOBODY = ("told me", "telling me", "mention", "nobody")  # how a decline says memory holds nothing


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", choices=("dev", "heldout"), default="dev")
    p.add_argument("--bias", type=float, nargs="+", default=[0.0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--chat", type=int, default=40, help="turns from the held-out chats (0: none)")
    p.add_argument("--show", type=int, default=6, help="replies to print per bias")
    p.add_argument("--database-url", default=None, help="a server to make a scratch database on (else embedded)")
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def messages(split: str, chat: int) -> list[tuple[str, str]]:
    """(set, text): the requests of ``split`` and ``chat`` turns of the held-out chats."""
    with open(REQUESTS, encoding="utf-8") as f:
        out = [("requests", r["text"]) for r in map(json.loads, f) if r["split"] == split]
    return out + [("chat", text) for _, (_, text) in picks(chat)] if chat else out


async def run(args: argparse.Namespace) -> dict:
    from bot.app import App
    from bot.brain import TELL_ME_MORE, without_shared_opener
    from bot.grounding import declines

    asked = messages(args.split, args.chat)
    results: dict[str, dict] = {}
    async with scratch_database(args.database_url, "chatdeclines") as url:
        settings = Settings(
            _env_file=None, data_dir=Path(tempfile.mkdtemp(prefix="hippobot-chatdeclines-")), database_url=url
        )
        app = await App.open(settings, with_llm=True)
        try:
            for bias in args.bias:
                app.brain.chat_decline_bias = bias
                rows = []
                for n, (kind, text) in enumerate(asked):
                    for r in range(args.repeats):
                        # each try a new person in a scope of their own: nothing remembered, no recent turns
                        scope = f"chat-{bias:g}-{n}-{r}"
                        reply = await app.brain.ask(text, scope, author_id=f"console:p{n}", author_name=f"p{n}")
                        said = " ".join((await reply.complete()).split())
                        rows.append(
                            {
                                "set": kind,
                                "text": text,
                                "reply": said,
                                "about_memory": reply.guard.about_memory,
                                "declines": declines(said),
                                "nobody": declines(said) and any(w in said.lower() for w in NOBODY),
                                # the model opened by claiming the person's experience ("Me too!"), not shown
                                "me_too": without_shared_opener(reply.model_text.strip()) != reply.model_text.strip(),
                                "only_me_too": said == TELL_ME_MORE,
                            }
                        )
                    print(f"  bias {bias:g}: {n + 1}/{len(asked)}", file=sys.stderr)
                results[f"{bias:g}"] = {"rows": rows}
            await app.brain.drain()
        finally:
            await app.close()
    return results


def table(results: dict, show: int) -> str:
    lines = [
        "| bias | set | messages | about memory | replies | decline | says nobody told it | words | me too (dropped) "
        "| only me too |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    samples = []
    for bias, r in results.items():
        for kind in ("requests", "chat", "all"):
            rows = [x for x in r["rows"] if kind in ("all", x["set"])]
            if not rows:
                continue
            chat = [x for x in rows if not x["about_memory"]]
            n = len(chat) or 1
            lines.append(
                f"| {bias} | {kind} | {len({x['text'] for x in rows})} | {sum(x['about_memory'] for x in rows)} | "
                f"{len(chat)} | {sum(x['declines'] for x in chat) / n:.3f} | {sum(x['nobody'] for x in chat) / n:.3f} "
                f"| {sum(len(x['reply'].split()) for x in chat) / n:.1f} "
                f"| {sum(x.get('me_too', False) for x in chat) / n:.3f} "
                f"| {sum(x.get('only_me_too', False) for x in chat) / n:.3f} |"
            )
        rng = random.Random(7)
        picked = rng.sample(r["rows"], min(show, len(r["rows"])))
        samples += [f"bias {bias}: {x['text']!r} -> {x['reply']!r}" for x in picked]
    return "\n".join(lines + ["", *samples])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    offline_environment()
    results = asyncio.run(run(args))
    print(
        f"chat declines, split {args.split}, {args.repeats} tries each, bundled model with the reader, the bot's "
        "sampling; 'about memory': messages the guard took for questions about memory (bias not applied); the "
        "other columns are over the other replies"
    )
    print(table(results, args.show))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
