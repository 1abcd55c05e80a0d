"""The Brain end to end on the real database and MiniLM, with a scripted LLM."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.app import App
from bot.brain import IncomingTurn
from memory.errors import InvalidInput
from memory.layers.facts import FactsLayer
from memory.semantic import SemanticMemory
from tests.fakes import ScriptedLLM


def turn(text: str, *, scope: str = "g1", author: str = "ana", channel: str = "c1") -> IncomingTurn:
    return IncomingTurn(
        scope=scope, source="console", channel_id=channel, author_id=f"u-{author}", author_name=author, text=text
    )


def graph(app: App) -> SemanticMemory:
    """The knowledge graph of the app's facts layer (registered when the graph is on, as in the tests' app)."""
    facts = app.brain.layer("facts")
    assert isinstance(facts, FactsLayer)
    return facts.semantic


async def say(app: App, text: str, **kw: str) -> str:
    reply = await app.brain.respond(turn(text, **kw))
    return "".join([d async for d in reply])


async def test_a_turn_persists_the_message_streams_the_reply_and_writes_memory(app: App, llm: ScriptedLLM) -> None:
    pool = app.db.pool
    reply = await app.brain.respond(turn("I adopted a cat called Miso last spring"))
    # the message is stored before a single token is generated
    assert await pool.fetchval("SELECT content FROM messages WHERE id = $1", reply.message.id) == (
        "I adopted a cat called Miso last spring"
    )
    deltas = [d async for d in reply]
    assert len(deltas) > 1 and "".join(deltas) == llm.reply
    await app.brain.drain()
    rows = await pool.fetch("SELECT is_bot, content, derived_from_id FROM messages ORDER BY id")
    assert [r["is_bot"] for r in rows] == [False, True]
    assert rows[1]["derived_from_id"] == reply.message.id
    episode = await pool.fetchrow("SELECT * FROM episodes")
    assert episode["message_id"] == reply.message.id and "Miso" in episode["content"]
    assert episode["novelty"] == pytest.approx(1.0) and episode["surprise"] == pytest.approx(2.5)
    assert episode["salience"] > 0
    match = await pool.fetchrow("SELECT * FROM archetype_matches")
    assert match["message_id"] == reply.message.id


async def test_the_plan_drives_what_goes_into_the_prompt(app: App, llm: ScriptedLLM) -> None:
    await say(app, "My sister Lena lives in Lisbon", channel="old")
    await app.brain.drain()
    await say(app, "do you remember where my sister lives?", channel="new")
    prompt = llm.prompts[-1]
    assert "Lisbon" in prompt, "memory_recall's plan recalls the episode from another channel"
    await say(app, "thanks!", channel="new")
    assert "Lisbon" not in llm.prompts[-1].split("Conversation:")[0], "simple_continuation loads no memories"


async def test_the_next_turn_sees_the_last_reply_even_before_its_write_lands(app: App, llm: ScriptedLLM) -> None:
    await say(app, "hello there")
    # no drain: the write may still be queued
    await say(app, "how are you?")
    assert f"hippobot: {llm.reply}" in llm.prompts[-1]
    await app.brain.drain()
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE is_bot") == 2


async def test_memory_writes_do_not_delay_the_reply(
    app: App, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = asyncio.Event()
    original = app.brain.absorber.absorb

    async def slow_write(*args: Any, **kw: Any) -> None:
        await gate.wait()
        await original(*args, **kw)

    monkeypatch.setattr(app.brain.absorber, "absorb", slow_write)
    text = await asyncio.wait_for(say(app, "a message whose write is held back"), timeout=10)
    assert text == llm.reply  # the reply finished while its write is still blocked
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 0
    gate.set()
    await app.brain.drain()
    assert await app.db.pool.fetchval("SELECT count(*) FROM episodes") == 1


@pytest.mark.parametrize("text, reason", [("", "empty"), ("   \n\t ", "empty"), ("x" * 9000, "limit is 8,000")])
async def test_bad_input_gets_a_clear_error_and_writes_nothing(app: App, text: str, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        await app.brain.respond(turn(text))
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0


async def test_forgetting_a_message_removes_what_was_derived_from_it(app: App) -> None:
    first = await app.brain.respond(turn("I adopted a cat called Miso"))
    await first.complete()
    second = await app.brain.respond(turn("I like jazz"))
    await second.complete()
    await app.brain.drain()
    report = await app.provenance.forget_message("g1", first.message.id)
    assert (report.messages, report.episodes) == (2, 1)  # the message and the bot's reply to it
    pool = app.db.pool
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE content LIKE '%Miso%'") == 0
    assert await pool.fetchval("SELECT count(*) FROM archetype_matches WHERE message_id = $1", first.message.id) == 0
    assert await pool.fetchval("SELECT count(*) FROM episodes") == 1


async def test_forgetting_a_person_keeps_everyone_else(app: App) -> None:
    await say(app, "I am Ana and I love climbing", author="ana")
    await say(app, "I am Ben and I love chess", author="ben")
    await say(app, "I am Ana in another guild", author="ana", scope="g2")
    await app.brain.drain()
    report = await app.provenance.forget_author("g1", "u-ana")
    assert (report.messages, report.episodes) == (2, 1)
    pool = app.db.pool
    assert await pool.fetchval("SELECT count(*) FROM messages WHERE scope = 'g1' AND content LIKE '%Ana%'") == 0
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = 'g1'") == 1
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = 'g2'") == 1


async def test_context_is_read_only(app: App) -> None:
    bundle = await app.brain.context("what do I like?", "g1")
    assert bundle.plan.archetype == "preference_exploration"
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0
    assert await app.db.pool.fetchval("SELECT count(*) FROM archetype_matches") == 0
