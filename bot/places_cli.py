"""`hippobot places [TEXT] --scope S [--json]`: where to ask about something, where it was discussed, and the
procedures that worked for it; without TEXT, the scope's places (each channel and what is said there).

Opens the app through ``App.open`` (no language model; the embedder loads only for a TEXT). Wired into bot/cli.py with
``add_parser(sub)`` and ``run``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from bot.config import Settings


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("places", help="where to ask about a topic, and the procedures that worked for it")
    p.add_argument("text", nargs="?", help="the topic or problem; without it, the scope's places are listed")
    p.add_argument("--scope", help="the memory scope (default: the console scope)")
    p.add_argument("--channel", help="where you are asking from: its id or #name (routes start there)")
    p.add_argument("--k", type=int, default=3, help="how many places and procedures (1-10, default 3)")
    p.add_argument("--stats", action="store_true", help="places, edges, macros and the spatial gate's counters")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


async def run(settings: Settings, args: argparse.Namespace, out: TextIO = sys.stdout, *, embedder: Any = None) -> int:
    from bot.app import App
    from memory.errors import InvalidInput
    from memory.layers.macros import MacrosLayer, describe
    from memory.layers.places import PlacesLayer, topic_text
    from memory.places.codes import topic_of
    from memory.places.planner import UNSURE_FIT

    scope = args.scope or settings.console_scope
    text = ""
    if args.stats and args.text is not None:
        print("hippobot places: --stats takes no topic (it prints the scope's counters)", file=sys.stderr)
        return 2
    listing = args.text is None and not args.stats  # no topic: the places themselves
    if not args.stats and not listing:  # checked before the models and the database start
        try:
            text = topic_text(args.text)
        except InvalidInput as exc:
            print(f"hippobot places: {exc}", file=sys.stderr)
            return 2
    if not 1 <= args.k <= 10:
        print("hippobot places: --k must be between 1 and 10", file=sys.stderr)
        return 2
    # the counters and the list need no model: the embedder loads only for a topic
    app = await App.open(settings, with_llm=False, embedder=embedder, preload=not (args.stats or listing))
    try:
        # the app's layers; with places off in the settings, the same layers read what is stored
        places: Any = app.brain.layer("places") or PlacesLayer(app.db.pool, app.embedder)
        macros: Any = app.brain.layer("macros") or MacrosLayer(app.db.pool, app.embedder)
        channel = args.channel
        if channel is not None and not args.stats:  # an id, the console's name or the history's #name
            ids = await app.conversations.channels_named(scope, channel)
            if len(ids) != 1:
                why = (
                    f"fits several: {', '.join(ids[:10])}; name one by its id"
                    if ids
                    else f"no channel of that id or name has messages in scope {scope!r}"
                )
                print(f"hippobot places: --channel {channel}: {why}", file=sys.stderr)
                return 2
            channel = ids[0]
        # asking from a channel is asking as its audience, as /whereto does: a restricted channel sees its own
        # places and procedures, a public one what everyone sees
        visible = channel
        if args.stats:
            stats = {**await places.stats(scope), **await macros.stats(scope)}
            out.write(
                json.dumps(stats, indent=2) + "\n"
                if args.json
                else "\n".join(f"{k}: {v}" for k, v in stats.items()) + "\n"
            )
            return 0
        if listing:
            return await _list(places.store, app.conversations, scope, visible, args.channel, args.json, out)
        try:
            routes = await places.where_to(scope, text, channel_id=channel, visible_channel=visible, k=args.k)
            seen = await places.where_discussed(scope, text, visible_channel=visible, k=args.k)
            found = await macros.suggest(scope, text, visible_channel=visible, top_k=args.k)
        except InvalidInput as exc:
            print(f"hippobot places: {exc}", file=sys.stderr)
            return 2
        if args.json:
            out.write(
                json.dumps(
                    {
                        "scope": scope,
                        "text": text,
                        "ask_in": [r.as_dict() for r in routes],
                        "discussed_in": [r.as_dict() for r in seen],
                        "procedures": [m.as_dict() for m in found],
                    },
                    indent=2,
                    default=str,
                )
                + "\n"
            )
            return 0
        if not routes and not seen:
            from bot.cli import note_if_empty

            await note_if_empty(app.conversations, "places", scope)
        lines = [
            f"No channel here is clearly about “{topic_of(text)}”; the closest:"
            if routes and routes[0].unsure
            else f"Where to ask about “{topic_of(text)}”:"
        ]
        lines += [f"  {i}. {' → '.join(_shown(p) for p in r.places)}: {r.reason}" for i, r in enumerate(routes, 1)] or [
            "  nowhere yet: no place here is about that"
        ]
        # Nothing said here is clearly about it (no place fits it as well as a route the planner is sure of must):
        # the nearest places are shown as such, not as where it was discussed (P9: knitting "discussed" in
        # #cooking at fit 0.57)
        vague = bool(seen) and all(r.fit < UNSURE_FIT for r in seen)
        lines.append("Nothing said here was clearly about it; the nearest:" if vague else "Where it was discussed:")
        lines += [f"  {_shown(r.destination)} (fit {r.fit:.2f}): {r.reason}" for r in seen] or ["  nowhere yet"]
        lines.append("Procedures that worked:")
        lines += [f"  #{m.id} {describe(m)}" for m in found] or ["  none yet"]
        out.write("\n".join(lines) + "\n")
    finally:
        await app.close()
    return 0


async def _list(
    store: Any, conversations: Any, scope: str, visible: str | None, asked_from: str | None, as_json: bool, out: TextIO
) -> int:
    """The places of ``scope`` that ``visible``'s audience sees (None: what everyone there sees), busiest channel
    first; ``asked_from``: that channel as the person named it."""
    nodes = sorted((await store.graph(scope, visible)).nodes.values(), key=lambda n: (-n.messages, n.id))
    if as_json:
        out.write(
            json.dumps(
                {
                    "scope": scope,
                    "channel": visible,
                    "places": [
                        {
                            "place": n.id,
                            "channel": n.channel_id,
                            "name": n.name,
                            "parent_channel": n.parent_channel_id,
                            "about": n.label,
                            "messages": n.messages,
                            "questions": n.questions,
                            "resolved": n.resolutions,
                            "last_seen": n.last_seen.isoformat(),
                        }
                        for n in nodes
                    ],
                },
                indent=2,
            )
            + "\n"
        )
        return 0
    if not nodes:
        from bot.cli import note_if_empty

        await note_if_empty(conversations, "places", scope)
        out.write(
            f"No places in scope {scope}: they are learned from what is said in its channels, and one left idle "
            "for long is dropped by the dream.\n"
        )
        return 0
    channels: dict[str, list[Any]] = {}  # a busy channel holds several places, one line for all of them
    for n in nodes:
        channels.setdefault(n.channel_id, []).append(n)
    lines = [f"Places in scope {scope}" + (f", as seen from {asked_from}:" if asked_from else ":")]
    for here in channels.values():
        about = "; ".join(p.label for p in here if p.label) or "no topic words yet"
        counts = (sum(p.messages for p in here), sum(p.questions for p in here), sum(p.resolutions for p in here))
        lines.append(f"  {_shown(here[0])}: {about} ({{}} message(s), {{}} question(s), {{}} resolved)".format(*counts))
    lines.append("Ask where to go with: hippobot places TEXT")
    out.write("\n".join(lines) + "\n")
    return 0


def _shown(node: Any) -> str:
    """A place's channel as a terminal can show it: a numbered channel by its name where the history gave one."""
    from memory.places.codes import channel_label

    return f"#{node.name}" if node.name and node.channel_id.isdigit() else channel_label(node.channel_id)
