"""`hippobot mine --person P [--scope S] [--channel C] [--json]`: what the bot holds about one person in one scope,
the command-line twin of `/memory mine` (a listing) and, with ``--json``, of `/memory export` (the same JSON
document, whole, on stdout), for whoever runs the bot to answer a person's request.

The person is named as `hippobot forget` names them (an id, the console's name, a display name or username in the
history). What others said about them is included only as far as ``--channel``'s audience may see it (default:
public only), the rule the Discord commands follow. Wired into bot/cli.py with ``add_parser(sub)`` and ``run``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from bot.config import Settings
from memory.participation import ParticipationStore
from bot.discord.rules import jump_link
from bot.forget_cli import NotFound
from bot.forget_cli import _person as resolve_person  # the one rule for naming a person on the command line
from memory.fields import display_text
from memory.mine import MESSAGE, MemoryOfPerson, export_documents
from memory.sources import SourceRef


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("mine", help="what the bot holds about one person (as /memory mine and export)")
    p.add_argument("--person", required=True, help="their id, console name, or display name or username")
    p.add_argument("--scope", help="the memory scope (default: the console scope)")
    p.add_argument("--channel", help="include what others said about them where this channel's audience may see")
    p.add_argument("--json", action="store_true", help="the export's JSON document instead of a listing")
    return p


async def run(settings: Settings, args: argparse.Namespace, app: Any, out: TextIO = sys.stdout) -> int:
    """List (or export) what the bot holds about ``args.person``; 0 when done, 2 when nobody fits."""
    scope = args.scope or settings.console_scope
    try:
        _, shown, [person], _ = await resolve_person(app.db.pool, scope, args.person)
    except NotFound as exc:
        print(f"hippobot mine: {exc}", file=sys.stderr)
        return 2
    if args.channel is not None:  # '#mods' is the channel the history calls mods, as places reads it
        from bot.cli import named_channel

        args.channel, problem = await named_channel(app.conversations, scope, args.channel)
        if problem:
            print(f"hippobot mine: {problem}", file=sys.stderr)
            return 2
    # opting out is a Discord server's (chat.py applies it to guild scopes only, which are the guild's id)
    opted = await ParticipationStore(app.db.pool).opted_out(scope, person) if scope.isdigit() else None
    held = await MemoryOfPerson(app.db.pool).gather(scope, person, visible_channel=args.channel, opted_out=opted)
    if args.json:
        [document] = export_documents(held, app.brain.clock.now(), link=_links(scope), limit_bytes=sys.maxsize)
        out.write(document.decode())
        return 0
    items = held.listing()
    # a message an episode already shows is not listed again: say so, or "6 message(s)" heads a list of 3
    listed = sum(1 for i in items if i.kind == MESSAGE)
    inside = f" ({listed} listed; the others are in their episodes)" if listed < len(held.messages) else ""
    out.write(
        f"{shown} in scope {scope}: {len(held.facts)} fact(s), {len(held.episodes)} episode(s), "
        f"{len(held.messages)} message(s){inside}{'; opted out of being remembered' if opted else ''}\n"
    )
    for item in items:
        sources = ", ".join(f"{s.ref.source} {s.ref.label()}" for s in item.sources)
        lock = " [restricted]" if item.restricted else ""
        text = display_text(" ".join(item.text.split()))  # what was stored, without its bidirectional controls
        out.write(f"- {item.created_at:%Y-%m-%d} {item.kind}{lock}: {text} ({sources})\n")
    return 0


def _links(scope: str) -> Callable[[SourceRef], str | None]:
    """Jump links for a Discord server's scope (its id) or DMs; none for the console's or an import's."""
    guild = int(scope) if scope.isdigit() else None
    dm = scope.startswith("dm:")

    def link(ref: SourceRef) -> str | None:
        if ref.source != "discord" or (guild is None and not dm):
            return None
        return jump_link(guild, ref.channel_id, ref.external_id)

    return link
