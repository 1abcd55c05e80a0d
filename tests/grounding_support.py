"""What the grounding tests share: a recalled memory item with its source, and telling the bot facts then asking
as someone, with the model's reply scripted (the check under test decides what is shown)."""

from __future__ import annotations

import re

from bot.app import App
from bot.brain import Reply
from memory.layers.base import MemoryItem
from memory.sources import SourceRef
from tests.fakes import ScriptedLLM
from tests.test_brain import say


def memory(text: str, rid: int = 1, author: str | None = "u-ana") -> MemoryItem:
    """An episode as recall gives it: ``text`` with one source message ``rid`` said by ``author``."""
    return MemoryItem("episode", 0.9, text, text, (rid,), sources=(SourceRef(rid, f"x{rid}", "c1", "console", author),))


async def tell(app: App, llm: ScriptedLLM, *lines: tuple[str, str]) -> None:
    """Each (author, text) said in scope g1, and every memory write done."""
    llm.reply = "Nice!"
    for author, text in lines:
        await say(app, text, author=author)
    await app.brain.drain()


async def tell_in(app: App, llm: ScriptedLLM, channel: str, author: str, text: str) -> None:
    """``text`` said by ``author`` in g1's restricted channel ``channel`` (only its audience sees it), absorbed."""
    from bot.brain import IncomingTurn

    llm.reply = "Noted."
    said = await app.brain.respond(
        IncomingTurn(
            scope="g1",
            source="console",
            channel_id=channel,
            author_id=f"u-{author}",
            author_name=author,
            text=text,
            visible_in=channel,
        )
    )
    await said.complete()
    await app.brain.drain()


async def ask_as(app: App, llm: ScriptedLLM, asker: str, question: str, model_says: str) -> Reply:
    """``question`` asked fresh by ``asker`` in g1 while the model would say ``model_says``; complete."""
    llm.reply = model_says
    reply = await app.brain.ask(question, "g1", author_id=f"u-{asker}", author_name=asker)
    await reply.complete()
    return reply


def undated(text: str) -> str:
    """``text`` without the days a reply writes after relative phrases ("next Friday (4 December 2026)"): they
    depend on the day a test runs."""
    return re.sub(r" \([^()]*\d{4}\)", "", text)
