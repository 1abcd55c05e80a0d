"""Archetype proposals worth a moderator's time, judged blind (issue 30.2).

    python -m bench.proposal_eval make --out DIR [--histories cycling study ... indiedev] [--seed 0]
    python -m bench.proposal_eval score --out DIR [--verdicts DIR/verdicts.jsonl]

``make`` generates the server histories of ``bench.proposal_histories`` (``cycling`` and ``study``
are dev; the others were each written blind (``kitchen``, ``indiedev``, ``photo``, ``homeowners`` by
engineers who never read the rules), run once as held out and are now spent (bench/README.md); a new round
needs new histories; about two months
each, several channels, one restricted), writes each as a `hippobot import` JSON Lines file, imports
them through the importer (``App.open`` + ``app.importer.run``, the restricted channel as a private
channel, as ``hippobot import --private-channel`` does) into a fresh embedded database, runs the
real dream for each server at the end of its history (``app.dream.run(now, scope=...)``, as
``hippobot dream --scope`` does), and collects every archetype proposal exactly as the dream
channel shows it (``Proposal.render()``) with the server's channel list. It writes:

- ``proposals.jsonl``: what the blind judge gets, one line a proposal: id, history, channels,
  text. Nothing else (no gold, no generator labels).
- ``key.json``: for our own count only, never for the judge: which generated kind of message each
  proposal's messages came from (``need:...``, ``chatter``, ``hobby``...), and the needs of each
  history.
- ``diagnostics.json`` and a table on stdout: per history, how each kind of message was served
  (share below the dream's low-similarity line), and every candidate theme the archetype
  analysis saw with why it was refused or what became of it. This reads the dream's own
  functions (``_poor_matches``, ``screen``, ``place``) after the run; it prints no proposal's text.
- ``histories/NAME.jsonl`` (the import files) and ``histories/NAME.labels.json``.

The judge reads ``bench/data/proposal_eval/brief.md`` and ``proposals.jsonl`` and writes
``verdicts.jsonl`` (id, verdict approve|reject, reason); ``score`` prints, per history, the
proposals, those judged worth approving, precision, and the needs covered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.proposal_histories import (  # noqa: E402
    DEV,
    HELD_OUT,
    HISTORIES,
    History,
    Message,
    generate,
    needs,
    write_import_file,
)
from bot.config import Settings, offline_environment  # noqa: E402

BRIEF = Path(__file__).resolve().parent / "data" / "proposal_eval" / "brief.md"
ARCHETYPE_KINDS = ("new_archetype", "edit_archetype")


def channel_list(history: History) -> list[str]:
    """The server's channels as a moderator sees them: names, the restricted one marked."""
    return [
        f"#{c}" + (" (restricted: not every member can read it)" if c == history.restricted else "")
        for c in history.channels
    ]


async def make(out: Path, names: list[str], *, seed: int, database_url: str | None) -> dict[str, Any]:
    from bot.app import App
    from memory.embed import MiniLMEmbedder

    offline_environment()
    (out / "histories").mkdir(parents=True, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="hippobot-proposal-eval-"))
    defaults = Settings(_env_file=None)
    settings = Settings(
        _env_file=None, data_dir=data_dir, models_dir=defaults.model_cache_dir, database_url=database_url
    )
    embedder = MiniLMEmbedder()
    embedder.load()
    app = await App.open(settings, with_llm=False, embedder=embedder)
    proposals, key, diagnostics = [], {}, {}
    try:
        for name in names:
            history = HISTORIES[name]
            messages = generate(history, seed=seed)
            path = write_import_file(history, messages, out / "histories" / f"{name}.jsonl")
            (out / "histories" / f"{name}.labels.json").write_text(
                json.dumps({m.id: m.label for m in messages}, indent=0), encoding="utf-8"
            )
            print(f"{name}: importing {len(messages)} messages", file=sys.stderr)
            report = await app.importer.run(path, history.scope, private_channels=[history.restricted])
            print(f"{name}: {report}", file=sys.stderr)
            now = history.end + timedelta(hours=3)
            run = await app.dream.run(now, scope=history.scope)
            step = run.steps.get("archetype_analysis")
            print(f"{name}: dream {run.status}; archetype_analysis {step.as_dict() if step else '-'}", file=sys.stderr)
            labels = {m.id: m.label for m in messages}
            made = await _proposals(app, history, labels)
            for n, (proposal, source_labels) in enumerate(made, 1):
                pid = f"{name}-{n}"
                proposals.append(
                    {"id": pid, "history": name, "channels": channel_list(history), "text": proposal.render()}
                )
                top, share = _majority(source_labels)
                key[pid] = {
                    "history": name,
                    "kind": proposal.kind,
                    "need": top,
                    "share": round(share, 3),
                    "members": sum(source_labels.values()),
                    "labels": dict(source_labels.most_common()),
                }
            diagnostics[name] = {
                "messages": len(messages),
                "import": str(report),
                "dream_status": run.status,
                "archetype_analysis": step.as_dict() if step else None,
                "other_proposals": await _other_kinds(app, history.scope),
                "served": await _served(app, history, labels, now),
                "candidates": await _candidates(app, history, labels, now),
                "proposals": len(made),
            }
    finally:
        await app.close()
    (out / "proposals.jsonl").write_text(
        "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in proposals), encoding="utf-8"
    )
    key_doc = {"needs": {n: needs(HISTORIES[n]) for n in names}, "proposals": key}
    (out / "key.json").write_text(json.dumps(key_doc, indent=2), encoding="utf-8")
    (out / "diagnostics.json").write_text(json.dumps(diagnostics, indent=2, default=str), encoding="utf-8")
    return {"diagnostics": diagnostics, "key": key_doc}


async def _proposals(app: Any, history: History, labels: dict[str, str]) -> list[tuple[Any, Counter[str]]]:
    """Every archetype proposal the dream made for the server, with the generator labels of its messages."""
    found = await app.governance.list(("pending", "approved", "applied", "rejected", "expired"), scope=history.scope)
    out = []
    for proposal in found:
        if proposal.kind not in ARCHETYPE_KINDS:
            continue
        rows = await app.governance.pool.fetch(
            """SELECT m.external_id FROM proposal_sources s JOIN messages m ON m.id = s.message_id
               WHERE s.proposal_id = $1""",
            proposal.id,
        )
        out.append((proposal, Counter(labels.get(r["external_id"], "?") for r in rows)))
    return out


async def _other_kinds(app: Any, scope: str) -> dict[str, int]:
    rows = await app.governance.pool.fetch(
        "SELECT kind, count(*) AS n FROM proposals WHERE scope = $1 AND kind <> ALL($2::text[]) GROUP BY kind",
        scope,
        list(ARCHETYPE_KINDS),
    )
    return {r["kind"]: r["n"] for r in rows}


async def _window(app: Any, history: History, now: Any) -> tuple[Any, Any]:
    from dream.cycle import history_end

    end = await history_end(app.governance.pool, history.scope, now)
    return end - timedelta(days=app.dream.services.config.lookback_days), end


async def _served(app: Any, history: History, labels: dict[str, str], now: Any) -> dict[str, dict[str, Any]]:
    """Per kind of message, in the dream's window: how many, mean best-archetype similarity, the share the
    dream counts as poorly served, and the archetype they matched most."""
    since, _ = await _window(app, history, now)
    low = app.dream.services.config.low_similarity
    rows = await app.governance.pool.fetch(
        """SELECT m.external_id, am.similarity, ca.archetype_name FROM archetype_matches am
           JOIN messages m ON m.id = am.message_id LEFT JOIN context_archetypes ca ON ca.id = am.archetype_id
           WHERE am.scope = $1 AND am.matched_at BETWEEN $2 AND $3""",
        history.scope,
        since,
        now,
    )
    by: dict[str, list[Any]] = {}
    for r in rows:
        by.setdefault(labels.get(r["external_id"], "?"), []).append(r)
    return {
        label: {
            "n": len(rs),
            "mean_similarity": round(sum(r["similarity"] for r in rs) / len(rs), 3),
            "poorly_served": round(sum(r["similarity"] < low for r in rs) / len(rs), 3),
            "nearest": Counter(r["archetype_name"] for r in rs).most_common(1)[0][0],
        }
        for label, rs in sorted(by.items())
    }


async def _candidates(app: Any, history: History, labels: dict[str, str], now: Any) -> list[dict[str, Any]]:
    """Every candidate theme of the archetype analysis (its clusters after merging), with why it was refused,
    re-derived with the dream's own functions on the same window (``screen``, then ``place`` for those that
    pass: the nearest archetype, its lead over the second, and whether it already serves them)."""
    from dream.archetype_analysis import _example_vectors, _poor_matches, made_for, place
    from dream.themes import Recurrence, screen, unit

    services = app.dream.services
    cfg = services.config
    since, _ = await _window(app, history, now)
    poor = await _poor_matches(services, history.scope, since, now)
    ids = {
        r["id"]: r["external_id"]
        for r in await app.governance.pool.fetch("SELECT id, external_id FROM messages WHERE scope = $1", history.scope)
    }
    recurrence = Recurrence(people=cfg.theme_people, days=cfg.theme_days, request_share=cfg.theme_request_share)
    kept_apart: list[str] = []
    found = await asyncio.to_thread(
        screen,
        poor,
        distance=cfg.cluster_distance,
        min_size=cfg.min_cluster_size,
        merge_similarity=cfg.theme_merge_similarity,
        recurrence=recurrence,
        kept_apart=kept_apart,
    )
    examples = await _example_vectors(services, history.scope)
    out = []
    for c in found:
        why, nearest = c.refused, ""
        if why is None:
            placement = place(
                services,
                history.scope,
                c.members,
                unit(np.mean([m.vector for m in c.members], axis=0)),
                examples=examples,
            )
            fit = placement.fits.get(placement.nearest or "")
            nearest = f"{placement.nearest} +{placement.margin:.3f}" + (
                f", fit {fit[0]:.2f}/{fit[1]:.2f} {'made for them' if made_for(placement.nearest or '', fit) else 'not theirs'}"
                if fit
                else ""
            )
            if placement.served_by:
                why = f"served by {placement.served_by} (same plan)"
        composition = Counter(labels.get(ids.get(m.message_id, ""), "?") for m in c.members)
        out.append(
            {
                "size": len(c.members),
                "merged": c.merged_from,
                "refused": why or "",
                "requests": round(c.request_share, 2),
                "nearest": nearest,
                "labels": dict(composition.most_common()),
            }
        )
    out.append({"poor_matches": len(poor), "seeded_themes": len(found), "kept_apart": kept_apart})
    return out


def _majority(labels: Counter[str]) -> tuple[str, float]:
    if not labels:
        return "?", 0.0
    top, n = labels.most_common(1)[0]
    return top, n / sum(labels.values())


def print_make(result: dict[str, Any]) -> None:
    diagnostics, key = result["diagnostics"], result["key"]
    for name, d in diagnostics.items():
        split = "dev" if name in DEV else "held out" if name in HELD_OUT else "spent: run for the report only"
        print(
            f"\n## {name} ({split}): {d['messages']} messages; dream {d['dream_status']}; "
            f"{d['proposals']} archetype proposal(s); other kinds: {d['other_proposals'] or 'none'}"
        )
        counts = (d["archetype_analysis"] or {}).get("counts", {})
        print("archetype_analysis counts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        print(f"{'kind of message (last 30 days)':<32}{'n':>5}{'mean sim':>10}{'poorly served':>15}  nearest")
        for label, s in d["served"].items():
            print(f"{label:<32}{s['n']:>5}{s['mean_similarity']:>10.3f}{s['poorly_served']:>15.0%}  {s['nearest']}")
        cands = [c for c in d["candidates"] if "size" in c]
        totals: dict[str, Any] = next((c for c in d["candidates"] if "poor_matches" in c), {})
        print(
            f"candidate themes: {len(cands)} (poor matches {totals.get('poor_matches', 0)}); requests: share of "
            "its messages that ask for something; nearest: the archetype nearest its centroid, + its lead, and "
            "fit: its messages' similarity to that archetype's examples / its examples' to each other"
        )
        for c in cands:
            top = ", ".join(f"{k} {v}" for k, v in list(c["labels"].items())[:3])
            near = f", nearest {c['nearest']}" if c["nearest"] else ""
            print(
                f"  {c['size']:>4} msgs, {c['merged']} merged, requests {c['requests']:.0%}{near}: "
                f"{c['refused'] or 'passes the rules'}  [{top}]"
            )
        apart = totals.get("kept_apart", [])
        print(
            f"groups of requests close enough to merge but kept apart as two kinds: {len(apart)}"
            + "".join(f"\n    {line}" for line in apart)
        )
    covered = {
        n: sorted({p["need"] for p in key["proposals"].values() if p["history"] == n} & set(ns))
        for n, ns in key["needs"].items()
    }
    print(
        "\nneeds with a proposal (by majority of its messages): "
        + "; ".join(f"{n}: {', '.join(c) or 'none'}" for n, c in covered.items())
    )


def score(out: Path, verdicts_path: Path) -> None:
    proposals = [json.loads(line) for line in (out / "proposals.jsonl").read_text().splitlines() if line.strip()]
    key = json.loads((out / "key.json").read_text())
    verdicts = {}
    for n, line in enumerate(verdicts_path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        v = json.loads(line)
        if v.get("verdict") not in ("approve", "reject"):
            raise SystemExit(f"{verdicts_path}:{n}: verdict must be approve or reject, not {v.get('verdict')!r}")
        verdicts[v["id"]] = v
    if missing := [p["id"] for p in proposals if p["id"] not in verdicts]:
        raise SystemExit(f"{verdicts_path}: no verdict for {', '.join(missing)}")
    print(f"{'history':<10}{'proposals':>11}{'approved':>10}{'precision':>11}  needs covered (approved / any)")
    total = approved_total = 0
    for name, history_needs in key["needs"].items():
        mine = [p for p in proposals if p["history"] == name]
        approved = [p for p in mine if verdicts[p["id"]]["verdict"] == "approve"]
        total, approved_total = total + len(mine), approved_total + len(approved)
        by_need = {key["proposals"][p["id"]]["need"] for p in approved}
        any_need = {key["proposals"][p["id"]]["need"] for p in mine}
        precision = f"{len(approved) / len(mine):.2f}" if mine else "-"
        print(
            f"{name:<10}{len(mine):>11}{len(approved):>10}{precision:>11}  "
            f"{len(by_need & set(history_needs))}/{len(history_needs)} / "
            f"{len(any_need & set(history_needs))}/{len(history_needs)}"
        )
    print(f"{'all':<10}{total:>11}{approved_total:>10}{(approved_total / total if total else 0):>11.2f}")
    rejected = [p for p in proposals if verdicts[p["id"]]["verdict"] == "reject"]
    if rejected:
        print("\nrejected:")
        for p in rejected:
            k = key["proposals"][p["id"]]
            print(
                f"  {p['id']} (from {k['need']}, {k['share']:.0%} of its {k['members']} messages): "
                f"{verdicts[p['id']]['reason']}"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make", help="generate, import, dream; write proposals.jsonl and key.json")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--histories", nargs="+", default=list(HISTORIES), choices=list(HISTORIES))
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--database-url", help="a PostgreSQL with pgvector (default: a fresh embedded one)")
    s = sub.add_parser("score", help="read verdicts.jsonl and print the table")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--verdicts", type=Path)
    args = p.parse_args()
    if args.command == "make":
        args.out.mkdir(parents=True, exist_ok=True)
        print_make(asyncio.run(make(args.out, args.histories, seed=args.seed, database_url=args.database_url)))
        print(f"\nwrote {args.out / 'proposals.jsonl'} (for the judge, with {BRIEF}) and {args.out / 'key.json'}")
    else:
        score(args.out, args.verdicts or args.out / "verdicts.jsonl")


if __name__ == "__main__":
    main()


__all__ = ["Message", "channel_list", "make", "score"]
