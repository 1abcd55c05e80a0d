"""The pure rules behind channel modes, memory, opt-out, the rate limit and splitting (no Discord, no database),
and the opt-out store on the real database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypedDict

import asyncpg

from memory.participation import ParticipationStore, optout_digest
from bot.discord.ratelimit import RateLimiter
from bot.discord.rules import MessageFacts, Part, channel_mode, split_message, take_part
from bot.discord.streaming import StreamingReply

BASE = MessageFacts(
    author_id=1,
    author_is_bot=False,
    bot_id=99,
    is_dm=False,
    mentions_bot=False,
    channel_id=10,
    parent_channel_id=None,
    thread_owner_id=None,
)


class Rules(TypedDict):
    """take_part's arguments besides the message and the channel's mode."""

    remember: bool
    opted_out: bool
    dream_channels: Collection[int]


def rules(*, remember: bool = False, opted_out: bool = False) -> Rules:
    return {"remember": remember, "opted_out": opted_out, "dream_channels": {30}}


NONE = rules()


def facts(**changes: Any) -> MessageFacts:
    return replace(BASE, **changes)


def test_mention_mode_answers_only_what_is_addressed() -> None:
    assert take_part(facts(), mode="mention", **NONE) == Part(False, False)
    assert take_part(facts(mentions_bot=True), mode="mention", **NONE) == Part(True, True)
    assert take_part(facts(replies_to_bot=True), mode="mention", **NONE) == Part(True, True)


def test_chat_answers_all_and_quiet_answers_none() -> None:
    assert take_part(facts(), mode="chat", **NONE) == Part(True, True)
    assert take_part(facts(mentions_bot=True), mode="quiet", **NONE) == Part(False, False)


def test_memory_stores_what_is_not_answered_unless_the_author_opted_out() -> None:
    assert take_part(facts(), mode="quiet", **rules(remember=True)) == Part(False, True)
    assert take_part(facts(), mode="quiet", **rules(remember=True, opted_out=True)) == Part(False, False)
    assert take_part(facts(mentions_bot=True), mode="mention", **rules(opted_out=True)) == Part(True, False), (
        "an opted-out person is answered, never stored"
    )


def test_bots_and_the_dream_channel_are_never_conversation_even_remembered() -> None:
    remembered = rules(remember=True)
    assert take_part(facts(author_is_bot=True), mode="chat", **remembered) == Part(False, False)
    assert take_part(facts(author_id=99), mode="chat", **remembered) == Part(False, False)
    assert take_part(facts(channel_id=30), mode="chat", **remembered) == Part(False, False)
    assert take_part(facts(channel_id=31, parent_channel_id=30), mode="chat", **remembered) == Part(False, False)


def test_a_stored_mode_wins_over_the_allowed_channels_and_threads_follow_their_parent() -> None:
    assert channel_mode(None, channel_id=10, parent_channel_id=None, allowed_channels=()) == "mention"
    assert channel_mode(None, channel_id=10, parent_channel_id=None, allowed_channels=(10,)) == "chat"
    assert channel_mode(None, channel_id=11, parent_channel_id=10, allowed_channels=(10,)) == "chat"
    assert channel_mode("quiet", channel_id=10, parent_channel_id=None, allowed_channels=(10,)) == "quiet"


def test_the_rate_limit_is_per_person_tells_once_and_slides() -> None:
    now = [0.0]
    limiter = RateLimiter(2, 60.0, clock=lambda: now[0])
    assert limiter.check(1).allowed and limiter.check(1).allowed
    first = limiter.check(1)
    assert not first.allowed and first.notify and first.retry_after == 60.0
    assert not limiter.check(1).notify, "told once per window"
    assert limiter.check(2).allowed, "another person"
    now[0] = 60.0
    assert limiter.check(1).allowed
    assert RateLimiter(0, 60.0).check(1).allowed, "0 turns it off"


def test_split_prefers_paragraphs_then_sentences() -> None:
    text = "A" * 900 + "\n\n" + "B" * 900 + ". " + "C" * 400
    assert split_message(text, 1000)[0] == "A" * 900
    pieces = split_message("word " * 100 + "End one. " + "x" * 60 + " tail", 560)
    assert pieces[0].endswith("End one."), pieces[0][-20:]


def test_split_closes_and_reopens_a_code_block() -> None:
    code = "\n".join(f"print({i})" for i in range(300))
    pieces = split_message(f"Look:\n```py\n{code}\n```\nDone.", 500)
    assert all(len(p) <= 500 for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)
    assert all(p.startswith("```py\n") for p in pieces[1:-1])
    lines = [ln for p in pieces for ln in p.splitlines() if ln.startswith("print(")]
    assert lines == [f"print({i})" for i in range(300)], "every line once, none cut"


async def test_stop_ends_a_stream_waiting_for_the_next_token() -> None:
    posted: list[str] = []

    class Post:
        async def edit(self, *, content: str) -> None:
            posted.append(content)

    async def send(content: str) -> Post:
        posted.append(content)
        return Post()

    async def slow() -> AsyncIterator[str]:
        yield "first words"
        await asyncio.Event().wait()  # a model that never writes again
        yield "never"

    stream = StreamingReply(send, interval=0.0)
    running = asyncio.ensure_future(stream.run(slow()))
    await asyncio.sleep(0.01)
    stream.stop()
    assert await asyncio.wait_for(running, 5) == "first words"
    assert posted == ["first words"]


async def test_an_optout_is_per_server_and_keeps_no_id(pool: asyncpg.Pool) -> None:
    store = ParticipationStore(pool)
    now = datetime.now(UTC)
    assert await store.opt_out("g1", "4242", now)
    assert not await store.opt_out("g1", "4242", now), "already opted out"
    assert await store.opted_out("g1", "4242") and not await store.opted_out("g2", "4242")
    row = await pool.fetchrow("SELECT * FROM memory_optouts")
    assert "4242" not in str(dict(row)) and row["digest"] == optout_digest("g1", "4242")
    listening = await store.lookup("g1", "10", "4242")
    assert listening.opted_out and listening.setting.mode is None and not listening.setting.remember
    assert await store.opt_in("g1", "4242") and not await store.opted_out("g1", "4242")
