"""`hippobot forget --scope S (--channel C | --person P | --message M) [--yes]`: forget a channel, a person or one
message of a scope, with everything the bot derived from them (episodes, facts, places, procedures, opinions,
moments, adapters' data), as deleting them on Discord does.

Without ``--yes`` it only says what would be forgotten. A channel or person is named by its stored id, by the
console's name for it (``hippobot chat --channel NAME``), or by its name in the history (``#python-help``,
``ana``); a name that fits several is refused with the candidates and their ids (an id always names one).
Wired into bot/cli.py with ``add_parser(sub)`` and ``run``.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, TextIO

import asyncpg

from bot.config import Settings
from memory.conversation import ConversationStore


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("forget", help="forget a channel, a person or a message, and all derived from it")
    p.add_argument("--scope", help="the memory scope (default: the console scope)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--channel", help="a channel (or thread): its id, console name or #name")
    what.add_argument("--person", help="a person: their id, console name, or display name or username in the history")
    what.add_argument(
        "--message",
        help="one message: its id in the history (or on Discord), or as chat and recall show it (#N or CHANNEL/ID)",
    )
    p.add_argument("--yes", action="store_true", help="forget it; without this, only say what would be forgotten")
    return p


_STORE_ID = re.compile(r"#(\d{1,19})")  # how the console shows a message: the store's id
_MAX_BIGINT = 2**63 - 1


class NotFound(Exception):
    pass


async def _resolve(pool: asyncpg.Pool, scope: str, args: argparse.Namespace) -> tuple[str, str, list[str], int]:
    """(what kind, how to name it to the person, the stored ids it names, messages they hold); NotFound when
    nothing fits, or a name fits several."""
    if args.message is not None:
        return await _message(pool, scope, args.message)
    if args.channel is not None:
        ids = await ConversationStore(pool).channels_named(scope, args.channel)
        if not ids:
            raise NotFound(f"no channel {args.channel!r} has messages in scope {scope!r}")
        if len(ids) > 1:
            raise NotFound(
                f"channel {args.channel!r} fits several in scope {scope!r}: {', '.join(ids[:10])}; name one by its id"
            )
        n = await pool.fetchval(  # with its threads
            """SELECT count(*) FROM messages
               WHERE scope = $1 AND (channel_id = ANY($2::text[]) OR thread_parent_id = ANY($2::text[]))""",
            scope,
            ids,
        )
        return "channel", args.channel if ids == [args.channel] else f"{args.channel} ({ids[0]})", ids, int(n)
    return await _person(pool, scope, args.person)


async def _message(pool: asyncpg.Pool, scope: str, given: str) -> tuple[str, str, list[str], int]:
    """A message by its id in the history (or on Discord), or as `hippobot chat` and `recall` show it: ``#N``
    (the store's id, how the console's own messages are shown) or ``CHANNEL/ID`` (the channel by its id or its
    #name, as recall shows an imported one). An id in the history is
    matched first, so a label never shadows one; the stored ids it names are returned, and each is described
    (channel/id, author, date) so that a dry run shows which message a bare id found."""
    query = """SELECT id, channel_id, external_id, author_name, created_at FROM messages
               WHERE scope = $1 AND {where} ORDER BY id"""
    rows = await pool.fetch(query.format(where="external_id = $2"), scope, given)
    if not rows and (m := _STORE_ID.fullmatch(given)) and int(m[1]) <= _MAX_BIGINT:
        rows = await pool.fetch(query.format(where="id = $2"), scope, int(m[1]))
    if not rows and "/" in given:
        channel, _, external = given.rpartition("/")
        rows = await pool.fetch(
            query.format(where="(channel_id = $2 OR lower(channel_name) = lower($4)) AND external_id = $3"),
            scope,
            channel,
            external,
            channel.removeprefix("#"),
        )
    if not rows:
        raise NotFound(
            f"no message {given!r} is stored in scope {scope!r} (by its id in the history, or as the "
            "console shows it: #N or CHANNEL/ID)"
        )
    what = "; ".join(
        f"{r['channel_id']}/{r['external_id']} by {r['author_name']}, {r['created_at']:%Y-%m-%d}" for r in rows[:5]
    )
    return "message", f"{given} ({what})", [str(r["id"]) for r in rows], len(rows)


async def _person(pool: asyncpg.Pool, scope: str, person: str) -> tuple[str, str, list[str], int]:
    """A stored author id names one person whatever else shares it as a name, and the others who go by it are
    named beside them (P8: "forget --person carla" forgot the person whose id is carla and said nothing of the
    Carla of a Discord export, whom a moderator then believed gone); a name (the console's, the display name or
    the username in the history) must fit exactly one person, or the candidates are listed with their ids."""
    rows = await pool.fetch(
        """SELECT author_id, count(*) AS n,
                  (array_agg(author_name ORDER BY created_at DESC, id DESC))[1] AS shown,
                  author_id = $2 AS by_id, author_id = 'console:' || $2 AS by_console,
                  bool_or(lower(author_name) = lower($2)) AS by_name
           FROM messages
           WHERE scope = $1 AND NOT is_bot
             AND (author_id = $2 OR author_id = 'console:' || $2 OR lower(author_name) = lower($2)
                  OR lower(author_username) = lower($2))
           GROUP BY author_id ORDER BY author_id""",
        scope,
        person,
    )
    if not rows:
        raise NotFound(
            f"no person {person!r} has messages in scope {scope!r} (by id, console name, display name or username)"
        )
    chosen = [r for r in rows if r["by_id"]] or rows
    if len(chosen) > 1:
        raise NotFound(
            f"person {person!r} fits several in scope {scope!r}: "
            f"{', '.join(_who(r) for r in chosen[:10])}; name one by their id (nothing was forgotten)"
        )
    [r] = chosen
    how = "id" if r["by_id"] else "console name" if r["by_console"] else "display name" if r["by_name"] else "username"
    others = [o for o in rows if o["author_id"] != r["author_id"]]
    also = (
        f"; not {', '.join(_who(o) for o in others[:10])}, also called {person!r} (name them by their id for theirs)"
        if others
        else ""
    )
    return "person", f"{r['author_id']} ({r['shown']}, matched by {how}){also}", [r["author_id"]], int(r["n"])


def _who(row: asyncpg.Record) -> str:
    return f"{row['author_id']} ({row['shown']})"


async def run(settings: Settings, args: argparse.Namespace, app: Any, out: TextIO = sys.stdout) -> int:
    """Forget what ``args`` names in an open ``App``; 0 when done (or, without --yes, when it was found)."""
    scope = args.scope or settings.console_scope
    pool = app.db.pool
    try:
        kind, shown, ids, n = await _resolve(pool, scope, args)
    except NotFound as exc:
        print(f"hippobot forget: {exc}", file=sys.stderr)
        return 2
    if not args.yes:
        out.write(
            f"would forget {kind} {shown} in scope {scope}: {n} message(s) and everything derived from "
            f"them; run again with --yes\n"
        )
        return 0
    counts: dict[str, int] = {}
    for stored in ids:
        if kind == "message":
            reports = [await app.provenance.forget_message(scope, int(stored))]
        elif kind == "person":
            reports = [await app.provenance.forget_author(scope, stored)]
        else:  # a channel: from whichever transport stored it (a Discord export and the live bot share ids)
            sources = [
                r["source"]
                for r in await pool.fetch(
                    """SELECT DISTINCT source FROM messages
                   WHERE scope = $1 AND (channel_id = $2 OR thread_parent_id = $2)""",
                    scope,
                    stored,
                )
            ]
            reports = [await app.provenance.forget_channel(source, stored, scope=scope) for source in sources]
        for report in reports:
            for key, value in report.counts.items():
                counts[key] = counts.get(key, 0) + value
    detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v)
    out.write(f"forgot {kind} {shown} in scope {scope}: {detail or 'nothing was left'}\n")
    return 0
