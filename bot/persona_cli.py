"""`hippobot persona [--scope S] [--json] [--history]`: the bot's persona in a scope, as it stands and as it moved.

Opens the app through ``App.open`` without loading a model (it reads the persona's store only). Wired into bot/cli.py with ``add_parser(sub)`` and ``run``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from bot.config import Settings


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("persona", help="show the bot's persona (snapshot, opinions) in a scope")
    p.add_argument("--scope", help="the memory scope (default: the console scope)")
    p.add_argument("--channel", help="the persona a channel speaks with (a restricted channel's own, else the scope's)")
    p.add_argument("--json", action="store_true", help="the whole state as JSON")
    p.add_argument("--history", action="store_true", help="every version, newest first, with why it changed")
    p.add_argument("--limit", type=_at_least_one, default=50, help="versions shown with --history (1 or more)")
    return p


def _at_least_one(value: str) -> int:
    """``--limit``: a whole number of versions, 1 or more ('0' and '-3' showed one version without a word)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of versions, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {number}")
    return number


async def run(settings: Settings, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    from bot.app import App
    from memory.persona.store import PersonaStore
    from memory.persona.view import as_json, render, render_history

    scope = args.scope or settings.console_scope
    app = await App.open(settings, with_llm=False, preload=False)  # reads the store only: no model loads
    try:
        store = PersonaStore(app.db.pool)
        if args.channel is not None:  # '#mods' is the channel the history calls mods, as places reads it
            from bot.cli import named_channel

            args.channel, problem = await named_channel(app.conversations, scope, args.channel)
            if problem:
                print(f"hippobot persona: {problem}", file=sys.stderr)
                return 2
        current = await store.current(scope, args.channel)
        # A channel with no persona of its own (a public one, or a restricted one nobody has shaped yet) speaks
        # with the scope's, as the persona layer does: show that one rather than the seed.
        borrowed = current is None and args.channel is not None
        visible_in = None if borrowed else args.channel
        if borrowed:
            current = await store.current(scope, None)
        if current is None and args.scope:
            from bot.cli import note_if_empty

            await note_if_empty(app.conversations, "persona", scope)
        history = await store.history(scope, visible_in, limit=args.limit) if args.history else None
        if args.json:
            data = as_json(current, history)
            data["scope"], data["visible_in"] = scope, visible_in
            data["core_identity"] = settings.persona
            out.write(json.dumps(data, indent=2, default=str) + "\n")
        else:
            if borrowed:
                out.write(f"Channel {args.channel} has no persona of its own; it speaks with the scope's:\n")
            out.write(render(current, core_identity=settings.persona, scope=scope) + "\n")
            if history is not None:
                out.write("\nHistory:\n" + render_history(history) + "\n")
    finally:
        await app.close()
    return 0
