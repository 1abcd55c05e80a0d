"""`hippobot ask --queries FILE [--conversation]`: the bot's whole pipeline for a batch of messages.

Each line of FILE is a JSON object ``{"text", "scope", "user", "channel", "now"}`` (all but text optional:
the console scope, the user "you", no channel, the clock's now). One JSON line is printed per message, in
order: the reply, the archetype, the memories that were in the prompt (kind, text, the ids of their source
messages as their users know them), the sources the reply drew on (bot.grounding's rule) and timings. One
process, one model load.

By default every message is a fresh question, read-only: no recent turns (no earlier line of the file is in
its context) and nothing is stored or absorbed, so a batch never changes what the next one finds.
``--conversation`` sends the lines as a conversation instead, through `hippobot chat`'s path: each is stored,
answered with the recent turns of its channel, and absorbed into memory after its reply.

Every line is checked before anything is loaded; a bad one is named with its line number.
Wired into bot/cli.py with ``add_parser(sub)``, ``check(args, settings)`` and ``run``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from bot.config import Settings

MAX_BAD_LINES = 20


@dataclass(frozen=True)
class AskLine:
    text: str
    scope: str
    user: str
    channel: str | None
    now: datetime | None


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("ask", help="answer a batch of messages (JSON Lines) with the whole pipeline")
    p.add_argument(
        "--queries",
        type=Path,
        required=True,
        help='JSON Lines of {"text", "scope", "user", "channel", "now"}; one JSON answer a line',
    )
    p.add_argument(
        "--conversation",
        action="store_true",
        help="store and absorb each line as a conversation turn (default: fresh, read-only questions)",
    )
    p.add_argument("--prompt", action="store_true", help="also print each prompt as the model saw it")
    return p


ASK_KEYS = ("text", "scope", "user", "channel", "now")


def read_lines(path: Path, settings: Settings) -> list[AskLine]:
    """Every line of ``path``, or ValueError naming the bad ones (the first 20)."""
    out: list[AskLine] = []
    problems: list[str] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8-sig", errors="strict").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            out.append(_line(raw, settings))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
    if problems:
        more = f"\n... and {len(problems) - MAX_BAD_LINES} more bad line(s)" if len(problems) > MAX_BAD_LINES else ""
        raise ValueError("\n".join(problems[:MAX_BAD_LINES]) + more)
    if not out:
        raise ValueError("no questions in it")
    return out


def _line(raw: str, settings: Settings) -> AskLine:
    from bot.cli import _query_line
    from memory.clock import parse_instant
    from memory.fields import check_time
    from memory.fields import MAX_ID_CHARS, id_problem

    text, scope = _query_line(raw, settings.console_scope, settings.max_message_chars, "the message")
    obj = json.loads(raw)
    unknown = sorted(set(obj) - set(ASK_KEYS))
    if unknown:  # a misspelt key ("chanel") would otherwise be asked as if it were not there (P13)
        raise ValueError(f"unknown key {', '.join(map(repr, unknown))} (the keys are {', '.join(ASK_KEYS)})")
    room = MAX_ID_CHARS - len("console:")
    fields: dict[str, str | None] = {}
    for key, default in (("user", "you"), ("channel", None)):
        value = obj.get(key, default)
        if value is not None and (
            not isinstance(value, str) or (problem := id_problem(value, f'"{key}"', max_chars=room))
        ):
            raise ValueError(problem if isinstance(value, str) else f'"{key}" must be a string')
        fields[key] = value
    now = obj.get("now")
    when = None
    if now is not None:
        if not isinstance(now, str):
            raise ValueError('"now" must be an ISO 8601 string')
        try:
            when = parse_instant(now)
        except ValueError:
            raise ValueError(f'"now" is not an ISO 8601 instant: {now[:40]!r}') from None
        when = check_time(when, '"now"')  # within the years memory can hold (1970-2200), as --now
    return AskLine(text, scope, fields["user"] or "you", fields["channel"], when)


async def run(settings: Settings, args: argparse.Namespace, lines: list[AskLine], out: TextIO = sys.stdout) -> int:
    from bot.app import App

    app = await App.open(settings, with_llm=True)
    try:
        for line in lines:
            out.write(
                json.dumps(
                    await answer(app, line, conversation=args.conversation, prompt=args.prompt), ensure_ascii=False
                )
                + "\n"
            )
            out.flush()
        await app.brain.drain()
    finally:
        await app.close()
    return 0


async def answer(app: Any, line: AskLine, *, conversation: bool = False, prompt: bool = False) -> dict:
    """One line through the pipeline; the JSON object `hippobot ask` prints for it."""
    from bot.brain import IncomingTurn
    from bot.console import console_channel_id, console_person

    brain = app.brain
    author_id = await console_person(app.conversations, line.scope, line.user) or f"console:{line.user}"
    channel = await console_channel_id(app.conversations, line.scope, line.channel) if line.channel else None
    started = time.perf_counter()
    if conversation:
        said_in = channel or f"console:{line.user}"
        # A line said in an imported restricted channel is as restricted as the channel's own messages (as the
        # console's, bot.console.console_identity): stored for the whole scope, everyone's recall found it.
        visible_in, parent = await app.conversations.channel_audience(line.scope, said_in)
        reply = await brain.respond(
            IncomingTurn(
                scope=line.scope,
                source="console",
                channel_id=said_in,
                author_id=author_id,
                author_name=line.user,
                text=line.text,
                created_at=line.now,
                visible_in=visible_in,
                thread_parent_id=parent,
            )
        )
    else:
        reply = await brain.ask(
            line.text, line.scope, author_id=author_id, author_name=line.user, channel_id=channel, now=line.now
        )
    text = (await reply.complete()).strip()
    total = time.perf_counter() - started
    grounding = reply.grounding()
    sources = await brain.source_lines(line.scope, grounding)
    t = reply.trace
    result = {
        "text": line.text,
        "scope": line.scope,
        "user": line.user,  # each line's asker and time, so an output line is read without its input (P5)
        "now": (line.now or app.brain.clock.now()).isoformat(),
        "reply": text,
        "archetype": reply.plan.archetype,
        "memory": [
            {"kind": i.kind, "text": i.text, "sources": [s.external_id for s in i.sources]}
            for i in reply.memories_in_prompt()
        ],
        "sources": [s.as_dict() for s in sources],
        "timings": {
            "embed_s": round(t.embed_s, 4),
            "recall_s": round(t.recall_s, 4),
            "prompt_s": round(t.prompt_s, 4),
            "first_token_s": None if t.first_token_s is None else round(t.first_token_s, 4),
            "total_s": round(total, 4),
            "prompt_tokens": t.prompt_tokens,
            "tokens": t.tokens,
        },
    }
    if prompt:
        result["prompt"] = reply.prompt.text
    return result
