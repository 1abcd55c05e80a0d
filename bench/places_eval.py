"""Places and procedures evaluation (issue 13, seed 001 SMPD): does the map answer "where do I ask", and does the
macro library hand back what worked?

The committed server history (bench/data/places/history.jsonl, written by bench/data/places/generate.py: 13
topic channels and #general, two topics spread over two channels, 20 people moving between channels, 39
solved how-to threads) is imported through the real pipeline (Importer -> Absorber -> every layer, the places
and macros layers included, on a real PostgreSQL with the real MiniLM), the dream's place and macro steps run
once, then held-out questions are asked:

- **where**: "where do I ask about X" from #general; right channel first (any channel where X is discussed),
  and the stricter share where it is the topic's home channel. Goal >= 0.9 on the held-out split. The dev
  splits (``dev`` in questions.json, 13 questions; ``dev2``, where_dev2.json, 65 questions written like
  heldout2 by another helper) are the only ones looked at while choosing the constants. Held-out splits: ``heldout`` in
  questions.json was seen once before the method changed; ``heldout2`` (where_heldout2.json, 52 questions, 4
  per channel, written by someone who never saw the retrieval code or its results) was clean until the channel
  names came in (run once before, at 568dc41); ``heldout3`` (where_heldout3.json, 52 more, written the same way
  for that change) was clean until 2026-11-25; ``heldout4`` (where_heldout4.json, 52 more, written blind the same
  way) was first run for the word-share experiment of that day (not kept), with and without it; ``heldout5`` and
  ``heldout6`` (where_heldout5.json, where_heldout6.json, 52 each, written blind by a helper who saw only the
  generator and the file format) were kept for the learned channel model and run once with it (memory.places.
  classifier). None is clean now: the next change to the retrieval needs a new blind split. Held-out misses are
  not printed (they are in --json). Channel names come
  from the history (its channels are named, not numbered); ``--name-weight 0`` plans without them.
- **off-topic**: "where do I ask about X" where no channel covers X (where_offtopic_dev.json, 30, used to choose the
  planner's UNSURE_* thresholds; where_offtopic_heldout.json, 30, not): the share answered nowhere, with #general
  itself, with a channel said to be unsure, and with a channel as if sure (the wrong answer).
- **procedures**: held-out rewordings of the solved problems; the right procedure in the top 3 (goal >= 0.8)
  and at the top.
- **spatial bar** (seed 10.1: EM >= 0.10 or steps to goal down by >= 20 % against no macros): a simulation.
  Each held-out problem starts in #general. Steps to goal = hops to the right channel + attempts until the
  working fix. *History*: what the thread took in the generated history (a detour through #general when the
  asker went there, a failed suggestion when there was one). *Places only*: one hop when the plan's first
  channel is right (else the history's detour), then the history's attempts. *Places + macros*: the same hop,
  then the suggested procedures tried in order (rank r of the right one = r attempts; not in the top 3 = the
  history's attempts). EM = the first route and the first procedure both right.

``--history-share S`` imports only the first share S of the history (a young server: the chatter lines come
first, then the solved threads), to see what channel names add when the topic codes are thin.

    .venv/bin/python -m bench.places_eval [--database-url URL] [--name-weight W] [--history-share S] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.evallib import scratch_database, write_json
from bot.config import Settings, offline_environment

DATA = Path(__file__).resolve().parent / "data" / "places"
SCOPE = "900000000000000001"
WHERE_SPLITS = (
    "dev",
    "dev2",
    "heldout",
    "heldout2",
    "heldout3",
    "heldout4",
    "heldout5",
    "heldout6",
    "heldout7",
    "heldout8",
)
OFFTOPIC_SPLITS = ("offtopic_dev", "offtopic_heldout")
GOALS = {"where": 0.9, "top3": 0.8}


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in header]] + [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join(
        [title, line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(r) for r in cells[1:])]
    )


async def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--database-url", help="an admin URL to create a scratch database on (default: embedded)")
    p.add_argument(
        "--name-weight",
        type=float,
        default=None,
        help="the channel name's share of a place's fit (default: the planner's NAME_WEIGHT; 0: no names)",
    )
    p.add_argument(
        "--model-weight",
        type=float,
        default=None,
        help="the learned channel model's share of a place's fit (default: the planner's MODEL_WEIGHT; 0: no model)",
    )
    p.add_argument(
        "--splits",
        default=",".join(WHERE_SPLITS + OFFTOPIC_SPLITS),
        help=f"the splits to ask, comma-separated (default: all of {', '.join(WHERE_SPLITS + OFFTOPIC_SPLITS)})",
    )
    p.add_argument(
        "--history-share",
        type=float,
        default=1.0,
        help="import only the first share of the history, 0 < S <= 1 (a young server)",
    )
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if not 0 < args.history_share <= 1:
        p.error("--history-share must be in (0, 1]")
    chosen = [x.strip() for x in args.splits.split(",") if x.strip()]
    if not chosen or set(chosen) - set(WHERE_SPLITS) - set(OFFTOPIC_SPLITS):
        p.error(f"--splits: choose among {', '.join(WHERE_SPLITS + OFFTOPIC_SPLITS)}")
    chosen_offtopic = [c for c in chosen if c in OFFTOPIC_SPLITS]
    chosen = [c for c in chosen if c in WHERE_SPLITS]
    offline_environment()
    from bot.app import App
    from memory.embed import MiniLMEmbedder
    from memory.layers.macros import MacrosLayer
    from memory.layers.places import PlacesLayer
    from bench.data.places.generate import CHANNELS
    from tests.fakes import ScriptedLLM

    scratch = contextlib.AsyncExitStack()  # a scratch database on --database-url, dropped at the end
    url = await scratch.enter_async_context(scratch_database(args.database_url, "placeseval"))
    embedder = MiniLMEmbedder()
    await asyncio.to_thread(embedder.load)
    settings = Settings(
        _env_file=None, data_dir=Path(tempfile.mkdtemp(prefix="hippobot-placeseval-")), database_url=url
    )
    app = await App.open(settings, with_llm=True, llm=ScriptedLLM("I see."), embedder=embedder)
    places, macros = app.brain.layer("places"), app.brain.layer("macros")  # registered by App.open
    assert isinstance(places, PlacesLayer) and isinstance(macros, MacrosLayer), "HIPPOBOT_PLACES_ENABLED is off"
    if args.name_weight is not None:
        places.name_weight = args.name_weight
    if args.model_weight is not None:
        places.model_weight = args.model_weight
    questions = json.loads((DATA / "questions.json").read_text("utf-8"))
    by_ask = {ask: pid for _, (_, _, ps) in CHANNELS.items() for pid, ask, _, _, _ in ps}
    results: dict[str, Any] = {}
    try:
        t0 = time.perf_counter()
        history = DATA / "history.jsonl"
        if args.history_share < 1:
            lines = history.read_text("utf-8").splitlines()
            history = Path(settings.data_dir) / "history-share.jsonl"
            history.write_text("\n".join(lines[: max(1, int(len(lines) * args.history_share))]) + "\n", "utf-8")
        report = await app.importer.run(history, SCOPE)
        import_s = time.perf_counter() - t0
        from datetime import UTC, datetime

        now = datetime.now(UTC)
        dream = {}
        for layer in (places, macros):
            for step_name, step in layer.dream_steps():
                if step_name in ("place_ttl", "macro_aging"):
                    continue  # the history is months old on purpose; its age is not what is measured
                dream[step_name] = (await step(now, SCOPE)).counts
        stats = {**await places.stats(SCOPE), **await macros.stats(SCOPE)}
        print(f"imported {report.imported} messages in {import_s:.1f} s; {stats}; dream {dream}\n")

        # where do I ask about X
        files = {
            "dev2": "where_dev2.json",
            "heldout2": "where_heldout2.json",
            "heldout3": "where_heldout3.json",
            "heldout4": "where_heldout4.json",
            "heldout5": "where_heldout5.json",
            "heldout6": "where_heldout6.json",
            "heldout7": "where_heldout7.json",
            "heldout8": "where_heldout8.json",
        }
        splits = {
            name: (json.loads((DATA / files[name]).read_text()) if name in files else questions["where"][name])
            for name in chosen
        }
        rows: list[tuple[object, ...]] = []
        for split, qs in splits.items():
            first = home = top3 = unsure_right = unsure_wrong = 0
            misses = []
            for q in qs:
                routes = await places.where_to(SCOPE, q["text"], channel_id="general", k=3)
                got = [r.destination.channel_id for r in routes]
                if routes and routes[0].unsure:
                    unsure_right += got[0] in q["channels"]
                    unsure_wrong += got[0] not in q["channels"]
                first += bool(got) and got[0] in q["channels"]
                home += bool(got) and got[0] == q["channel"]
                top3 += any(c in q["channels"] for c in got)
                if not got or got[0] not in q["channels"]:
                    misses.append(f"{q['text']!r}: wanted {q['channel']}, got {got}")
            n = len(qs)
            rows.append((split, n, first / n, home / n, top3 / n, f"{unsure_right} / {unsure_wrong}"))
            results[f"where_{split}"] = {
                "n": n,
                "right_first": first / n,
                "home_first": home / n,
                "right_top3": top3 / n,
                "unsure_right": unsure_right,
                "unsure_wrong": unsure_wrong,
                "misses": misses,
            }
        print(
            table(
                "Where do I ask about X? (asked from #general)",
                [
                    "split",
                    "questions",
                    "right channel first",
                    "home channel first",
                    "right in top 3",
                    "said unsure: right / wrong first",
                ],
                rows,
            )
        )
        for split in ("dev", "dev2"):
            for m in results.get(f"where_{split}", {}).get("misses", []):
                print(f"  {split} miss:", m)
        print(
            f"channel names: weight {places.name_weight}; learned channel model: weight {places.model_weight}; "
            f"history imported: {args.history_share:.0%}"
        )
        print(
            f"goal: right channel first >= {GOALS['where']} on held-out questions (heldout2-4: written apart, never "
            "looked at while choosing anything, each run before; heldout: seen before the method changed)"
        )

        # off-topic questions: nothing here is about them; "nowhere" or the lobby itself is the right answer
        rows = []
        for split in ("offtopic_dev", "offtopic_heldout"):
            if split not in chosen_offtopic:
                continue
            qs = json.loads((DATA / f"where_{split}.json").read_text())
            nowhere = lobby = unsure = 0
            wrong: list[str] = []
            for q in qs:
                routes = await places.where_to(SCOPE, q["text"], channel_id="general", k=3)
                if not routes:
                    nowhere += 1
                elif routes[0].destination.channel_id == "general":
                    lobby += 1
                elif routes[0].unsure:
                    unsure += 1
                else:
                    wrong.append(
                        f"{q['text']!r} -> {routes[0].destination.channel_id} (fit {routes[0].fit:.2f}, "
                        f"{routes[0].likelihood or 0:.0%} likely)"
                    )
            n = len(qs)
            rows.append((split, n, nowhere / n, lobby / n, unsure / n, len(wrong) / n))
            results[f"where_{split}"] = {
                "n": n,
                "nowhere": nowhere / n,
                "lobby": lobby / n,
                "unsure": unsure / n,
                "topic_channel": len(wrong) / n,
                "wrong": wrong,
            }
        if rows:
            print()
            print(
                table(
                    "Off-topic questions (no channel is about them; asked from #general)",
                    [
                        "split",
                        "questions",
                        "nowhere",
                        "#general (right here)",
                        "a channel, said to be unsure",
                        "a channel, as if sure (wrong)",
                    ],
                    rows,
                )
            )
            for m in results.get("where_offtopic_dev", {}).get("wrong", []):
                print("  offtopic_dev wrong:", m)

        # procedures for held-out problems, and the spatial bar
        hist = routed = with_macros = 0
        top1 = top3 = em = 0
        misses = []
        problems = questions["problems"]
        for q in problems:
            found = await macros.suggest(SCOPE, q["text"], top_k=3)
            ids = [by_ask.get(m.signature) for m in found]
            rank = ids.index(q["problem"]) + 1 if q["problem"] in ids else None
            top1 += rank == 1
            top3 += rank is not None
            routes = await places.where_to(SCOPE, q["text"], channel_id="general", k=1)
            right_place = bool(routes) and routes[0].destination.channel_id in q["channels"]
            detour = 2 if q["detour"] else 1  # hops to the right channel: via #general, or straight there
            attempts = q["attempts"]  # suggestions tried until the fix
            hops = 1 if right_place else detour
            hist += detour + attempts
            routed += hops + attempts
            with_macros += hops + (rank if rank is not None else attempts)
            em += right_place and rank == 1
            if rank is None:
                misses.append(f"{q['problem']}: {q['text']!r} -> {ids}")
        n = len(problems)
        print()
        print(
            table(
                "Procedures for held-out problems",
                ["problems", "right procedure first", "right in top 3"],
                [(n, top1 / n, top3 / n)],
            )
        )
        for m in misses:
            print("  miss:", m)
        print(f"goal: right procedure in the top 3 >= {GOALS['top3']}")
        cut = 1 - with_macros / routed if routed else 0.0
        print()
        print(
            table(
                "Spatial bar (seed 10.1; simulation, see the module docstring)",
                ["condition", "mean steps to goal", "EM (first route and first procedure right)"],
                [
                    ("history (no memory)", hist / n, "-"),
                    ("places only (no macros)", routed / n, "-"),
                    ("places + macros", with_macros / n, em / n),
                ],
            )
        )
        print(f"steps to goal vs no macros: -{cut:.1%} (bar: -20 %); EM {em / n:.3f} (bar: 0.10)")
        results.update(
            {
                "procedures": {"n": n, "top1": top1 / n, "top3": top3 / n, "misses": misses},
                "spatial": {
                    "steps_history": hist / n,
                    "steps_places": routed / n,
                    "steps_macros": with_macros / n,
                    "reduction_vs_no_macros": cut,
                    "em": em / n,
                },
                "stats": stats,
                "dream": dream,
            }
        )
    finally:
        await app.close()
        await scratch.aclose()
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
