"""Resonant recall (seed 000): moments of the bot's replies, their quality, and the boosts they give."""

from __future__ import annotations

import asyncio
import math
import random
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import cast

import asyncpg
import discord
import pytest

from bot.app import App
from bot.brain import IncomingTurn
from memory.layers.resonance import ResonanceLayer, rate_last_reply
from memory.resonance import MAX_BOOST, Metrics
from memory.resonance.features import arousal, words
from tests.fakes import ScriptedLLM

SCOPE = "g1"
GOOD_REPLY = "Santa brought me a shiny red accordion and I played carols all night"


def turn(
    text: str, *, author: str = "ana", channel: str = "c1", visible_in: str | None = None, scope: str = SCOPE
) -> IncomingTurn:
    return IncomingTurn(
        scope=scope,
        source="console",
        channel_id=channel,
        author_id=f"u-{author}",
        author_name=author,
        text=text,
        visible_in=visible_in,
    )


def raw_reaction(**fields: object) -> discord.RawReactionActionEvent:
    """A raw reaction event with only ``fields`` (what the reactions cog reads: user, channel, message, guild,
    emoji, member), typed as the event the cog takes: a real one carries a numeric guild id, and this test's
    server is "g1"."""
    return cast(discord.RawReactionActionEvent, SimpleNamespace(**fields))


@pytest.fixture
async def resonance(app: App, llm: ScriptedLLM) -> ResonanceLayer:
    layer = app.brain.layer("resonance")
    assert isinstance(layer, ResonanceLayer)  # registered by App.open (settings.resonance_enabled)
    app.brain.recall.timeout = 60.0  # what is recalled is under test here, not how fast (a busy CI machine)
    await layer.ready()
    return layer


async def say(app: App, llm: ScriptedLLM, text: str, reply: str, **kw: str) -> int:
    """One turn through the Brain with ``reply`` as the bot's words; the message id."""
    llm.reply = reply
    r = await app.brain.respond(turn(text, **kw))
    await r.complete()
    await app.brain.drain()
    return r.message.id


async def age_moments(app: App, days: int = 3, quality: float = 0.75) -> None:
    """Moments made days ago (no recency penalty) that people rated up (0.75: one /good), so they resonate."""
    await app.db.pool.execute(
        "UPDATE resonance_moments SET created_at = created_at - make_interval(days => $1), quality = $2", days, quality
    )


async def section(app: App, text: str, *, channel: str = "c2", scope: str = SCOPE):
    """The resonance section for ``text`` asked in another conversation (a moment in the transcript itself is
    left out of the section by Recall)."""
    bundle = await app.brain.context(text, scope, channel_id=channel)
    return bundle.section("resonance")


async def test_a_live_moment_keeps_the_generations_entropy_and_the_messages_novelty(
    app: App, resonance: ResonanceLayer, llm: ScriptedLLM
) -> None:
    llm.entropy = 2.5
    await say(app, llm, "I adopted a tortoise called Biscuit", "Biscuit is a wonderful name for a tortoise")
    first = await app.db.pool.fetchrow("SELECT entropy, novelty, surprise FROM resonance_moments")
    assert first["entropy"] == pytest.approx(2.5) and first["surprise"] is not None
    assert first["novelty"] == pytest.approx(1.0)  # nothing in the scope's episodes yet
    await say(app, llm, "I adopted a tortoise called Biscuit", "You told me, Biscuit the tortoise")
    again = await app.db.pool.fetchval("SELECT novelty FROM resonance_moments ORDER BY id DESC LIMIT 1")
    assert again < 0.2  # said before: its episode is the nearest one


# --- the seed's five -------------------------------------------------------------------------------------------


async def test_no_moments_gives_nothing(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    assert await section(app, "Tell me about Santa and the accordion") is None
    r = await app.brain.respond(turn("Tell me about Santa and the accordion"))
    await r.complete()
    assert llm.boosts[-1] == {}


async def test_one_obvious_moment_gives_boosts_on_its_tokens(
    app: App, resonance: ResonanceLayer, llm: ScriptedLLM
) -> None:
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    await say(app, llm, "How is the weather in Lisbon?", "Grey skies and drizzle over the river today")
    await age_moments(app)
    s = await section(app, "Did Santa bring you an accordion for carols?")
    assert s is not None and len(s.items) == 1
    assert "accordion" in s.items[0].text and "drizzle" not in s.items[0].text
    assert s.boosts and max(s.boosts.values()) <= MAX_BOOST + 1e-9
    mine = {llm.vocab[w] for w in words(GOOD_REPLY)}
    assert set(s.boosts) <= mine and llm.vocab["accordion"] in s.boosts
    assert llm.vocab.get("drizzle") not in s.boosts
    # the boosts reach the engine with the next reply
    r = await app.brain.respond(turn("Did Santa bring you an accordion for carols?", channel="c2"))
    await r.complete()
    assert llm.boosts[-1] == dict(s.boosts)


async def test_a_moment_nobody_rated_does_not_resonate(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    """An unrated reply may be an invention: its words are not boosted nor shown until people rate it up."""
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    await age_moments(app, quality=0.5)
    assert await section(app, "Did Santa bring you an accordion for carols?") is None
    await age_moments(app, days=0, quality=0.6)  # the person only carried on talking
    assert await section(app, "Did Santa bring you an accordion for carols?") is None
    await age_moments(app, days=0, quality=2 / 3)  # someone answered the reply itself
    assert await section(app, "Did Santa bring you an accordion for carols?") is not None


async def test_quality_and_arousal_order_the_scores(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    calm = await say(app, llm, "tell me about your garden roses", "My garden roses bloom in the quiet morning")
    loud = await say(app, llm, "YOUR GARDEN ROSES!!! 🌹🌹", "My garden roses bloom in the quiet evening")
    await age_moments(app)
    pool = app.db.pool
    await pool.execute("UPDATE resonance_moments SET quality = 0.9 WHERE message_id = $1", calm)
    await pool.execute("UPDATE resonance_moments SET quality = 0.66 WHERE message_id = $1", loud)
    probe = "how are the garden roses doing"
    assert (
        arousal(probe)
        < 0.1
        < await pool.fetchval("SELECT arousal FROM resonance_moments WHERE message_id = $1", loud) - 0.3
    )
    s = await section(app, probe)
    assert s is not None and [i.message_ids[0] for i in s.items] == [calm, loud]
    assert s.items[0].score > s.items[1].score
    # quality alone (the same arousal): the better moment first
    await pool.execute(
        "UPDATE resonance_moments SET arousal = 0, quality = CASE WHEN message_id = $1 THEN 0.9 ELSE 0.66 END", loud
    )
    s = await section(app, probe)
    assert s is not None and [i.message_ids[0] for i in s.items] == [loud, calm]
    # arousal alone (the same quality): the moment nearer the message's arousal first
    await pool.execute(
        "UPDATE resonance_moments SET quality = 0.75, arousal = CASE WHEN message_id = $1 THEN 0.9 ELSE 0 END", loud
    )
    s = await section(app, probe)
    assert s is not None and [i.message_ids[0] for i in s.items] == [calm, loud]


async def test_a_broken_store_gives_none_without_raising(
    app: App, resonance: ResonanceLayer, llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    await age_moments(app)
    # a corrupt row (words that are not text are impossible in SQL; NaN arousal and quality are not)
    await app.db.pool.execute("ALTER TABLE resonance_moments DROP CONSTRAINT resonance_moments_arousal_check")
    await app.db.pool.execute("UPDATE resonance_moments SET arousal = 'NaN'")
    s = await section(app, "Santa accordion carols")
    assert s is not None and all(math.isfinite(i.score) for i in s.items)
    # the table gone: no section, no boosts, a log line, and the reply still comes
    await app.db.pool.execute("DROP TABLE resonance_moments CASCADE")
    assert await resonance.recall(_query(app, "Santa accordion carols")) is None
    assert "resonance recall failed" in caplog.text
    r = await app.brain.respond(turn("Santa accordion carols"))
    assert await r.complete() and llm.boosts[-1] == {}


async def test_empty_prompt_gives_nothing(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    assert await resonance.recall(_query(app, "   ")) is None


def _query(app: App, text: str):
    from memory.recall import recall_query

    plan = app.router.default_plan if hasattr(app.router, "default_plan") else None
    import numpy as np

    plan = plan or app.router.classify(np.zeros(384, dtype=np.float32), SCOPE)
    return recall_query(
        SCOPE, text, np.zeros(384, dtype=np.float32), plan, datetime.now(UTC), channel_id="c1", visible_channel="c1"
    )


# --- moments ---------------------------------------------------------------------------------------------------


async def test_every_reply_becomes_a_moment_with_its_metrics(
    app: App, resonance: ResonanceLayer, llm: ScriptedLLM
) -> None:
    mid = await say(app, llm, "WOW, that is AMAZING!!! 🎉", "Thank you, I worked hard on the melody")
    row = await app.db.pool.fetchrow("SELECT * FROM resonance_moments WHERE message_id = $1", mid)
    assert row["surprise"] == pytest.approx(2.5) and row["quality"] == 0.5
    assert row["arousal"] > 0.5 and 0 < row["reply_len_norm"] < 1 and row["unique_ratio"] == 1.0
    assert "melody" in row["words"] and "thank" in row["words"]
    calm = await say(app, llm, "the meeting is at noon", "Noted, noon it is", author="ben")
    assert await app.db.pool.fetchval("SELECT arousal FROM resonance_moments WHERE message_id = $1", calm) < 0.3
    # the state search: the nearest moment to a state like the first reply's is the first one
    state = Metrics(
        surprise=0.25,
        entropy=0.0,
        novelty=1.0,
        arousal=row["arousal"],
        reply_len_norm=row["reply_len_norm"],
        unique_ratio=1.0,
    )
    near = await resonance.moments.query_similar(SCOPE, state, top_k=2)
    assert [s.message_id for s in near] == [mid, calm] and near[0].distance <= near[1].distance
    summary = await resonance.moments.summary_for_state(SCOPE, state)
    assert summary.count == 2 and summary.avg_quality == pytest.approx(0.5)
    assert await resonance.moments.query_similar(SCOPE, state, min_quality=0.6) == []


async def test_recalled_moments_count_their_uses(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    await age_moments(app)
    first = await section(app, "Santa accordion carols")
    assert first is not None
    await app.brain.context("Santa accordion carols", SCOPE, channel_id="c1")  # read-only: no use counted
    assert await app.db.pool.fetchval("SELECT uses FROM resonance_moments") == 0
    await say(app, llm, "Santa accordion carols", "Ho ho ho", channel="c2")
    assert await app.db.pool.fetchval("SELECT uses FROM resonance_moments WHERE uses > 0") == 1
    second = await section(app, "Santa accordion carols")
    assert second is not None and second.items[0].score < first.items[0].score  # damped by use and recency


# --- quality from people ---------------------------------------------------------------------------------------


async def test_reactions_replies_and_deletes_change_quality(
    app: App, resonance: ResonanceLayer, llm: ScriptedLLM
) -> None:
    from bot.discord.reactions import ReactionsCog
    from bot.discord.services import Services
    from tests.test_discord_commands import bot_double

    now = datetime.now(UTC)
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    ext = await app.db.pool.fetchval("SELECT external_id FROM messages WHERE is_bot")
    q0 = await app.db.pool.fetchval("SELECT quality FROM resonance_moments")
    up = await resonance.react("console", "c1", ext, "u-ben", "👍", added=True, now=now)
    assert up is not None and up > q0
    assert await resonance.react("console", "c1", ext, "u-ben", "👍", added=True, now=now) == up  # once a person
    assert await resonance.react("console", "c1", ext, "u-ben", "🦄", added=True, now=now) is None
    assert await resonance.react("console", "c1", ext, "u-ben", "👍", added=True, now=now, scope="other") is None
    down = await resonance.react("console", "c1", ext, "u-cy", "👎", added=True, now=now)
    assert down is not None and down < up
    back = await resonance.react("console", "c1", ext, "u-cy", "👎", added=False, now=now)
    assert back == pytest.approx(up)
    assert (await resonance.replied_to("console", "c1", ext, "u-cy", now=now) or 0) > up

    # the Discord cog: a raw reaction event on the reply, the bot's own reactions ignored
    bot = bot_double(user=SimpleNamespace(id=99))
    cog = ReactionsCog(bot, Services.of(app))
    await app.db.pool.execute(
        "UPDATE messages SET source = 'discord', channel_id = '5', external_id = '77' WHERE is_bot"
    )
    before = await app.db.pool.fetchval("SELECT quality FROM resonance_moments")
    payload = raw_reaction(user_id=99, channel_id=5, message_id=77, guild_id=SCOPE, emoji="😂", member=None)
    await cog.on_raw_reaction_add(payload)
    assert await app.db.pool.fetchval("SELECT quality FROM resonance_moments") == before
    payload.user_id = 12
    await cog.on_raw_reaction_add(payload)
    after = await app.db.pool.fetchval("SELECT quality FROM resonance_moments")
    assert after > before
    await cog.on_raw_reaction_remove(payload)
    assert await app.db.pool.fetchval("SELECT quality FROM resonance_moments") == pytest.approx(before)

    # the reply deleted: forgotten as a message, its moment stays without words, marked down
    await app.provenance.forget_transport_message("discord", "5", "77")
    row = await app.db.pool.fetchrow("SELECT * FROM resonance_moments")
    assert row["reply_id"] is None and row["words"] == [] and row["quality"] < before
    assert await section(app, "Santa accordion carols") is None


async def test_carrying_on_and_console_ratings(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    await say(app, llm, "Oh nice, which carols?", "Silent Night, twice")
    qualities = [r["quality"] for r in await app.db.pool.fetch("SELECT quality FROM resonance_moments ORDER BY id")]
    assert qualities[0] > 0.5 and qualities[1] == 0.5  # she carried on after the first reply
    line = await rate_last_reply(app.brain, SCOPE, "c1", "u-ana", good=False)
    assert "quality 0.25" in line
    line = await rate_last_reply(app.brain, SCOPE, "c1", "u-ana", good=True)  # her new rating replaces the old
    assert "quality 0.75" in line
    assert await rate_last_reply(app.brain, SCOPE, "elsewhere", "u-ana", good=True) == "no reply to rate yet"
    stats = await resonance.moment_stats(SCOPE)
    assert stats.moments == 2 and stats.rated == 2 and sum(stats.buckets) == 2 and "moments: 2" in stats.render()
    assert "moments: 2 (2 rated)" in str((await resonance.stats(SCOPE))["resonance"])  # what /memory stats shows


# --- who may see what, and forgetting ----------------------------------------------------------------------------


async def test_moments_keep_their_audience(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    await say(app, llm, "secret accordion plans", GOOD_REPLY, channel="mods", visible_in="mods")
    await age_moments(app)
    assert await section(app, "Santa accordion carols") is None  # a public channel
    mods = await section(app, "Santa accordion carols", channel="mods")
    assert mods is not None and mods.boosts
    assert await section(app, "Santa accordion carols", scope="g2") is None
    assert await app.db.pool.fetchval("SELECT visible_in FROM resonance_moments") == "mods"


async def test_forgetting_a_person_removes_the_moments_of_their_conversations(
    app: App, resonance: ResonanceLayer, llm: ScriptedLLM
) -> None:
    await say(app, llm, "zebrafinch for Christmas?", GOOD_REPLY, author="anastasia")
    await say(app, llm, "I like chess", "Chess is a fine accordion of moves", author="ben")
    ext = await app.db.pool.fetchval(
        "SELECT m.external_id FROM messages m JOIN resonance_moments r ON r.reply_id = m.id ORDER BY r.id DESC"
    )
    await resonance.react("console", "c1", ext, "u-anastasia", "👍", added=True, now=datetime.now(UTC))
    report = await app.provenance.forget_author(SCOPE, "u-anastasia")
    assert report.counts["moments"] == 1
    left = await app.db.pool.fetch("SELECT * FROM resonance_moments")
    assert len(left) == 1 and "chess" in left[0]["words"]
    assert left[0]["quality"] == 0.5  # her reaction went with her
    for table in ("resonance_moments", "resonance_signals"):
        assert await app.db.pool.fetchval(f"SELECT count(*) FROM {table} t WHERE t::text ILIKE '%anastasia%'") == 0


async def test_boosts_are_capped_whatever_alpha(app: App, llm: ScriptedLLM) -> None:
    layer = ResonanceLayer(app.db.pool, llm, alpha=5.0)
    app.layers.append(layer)
    await say(app, llm, "What did you get for Christmas?", GOOD_REPLY)
    await age_moments(app)
    s = await section(app, "Santa accordion carols")
    assert s is not None and s.boosts and max(s.boosts.values()) == MAX_BOOST


# --- the real model ----------------------------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.slow
async def test_boosted_tokens_appear_more_often_with_the_real_model(pool: asyncpg.Pool) -> None:
    """Gemma 3 270M: with a moment's boosts, its words are sampled significantly more often than without.

    Paired design: the same seeds with and without the boosts (the same random draws until the texts part),
    128 samples of 4 tokens in one batch each, after a prompt where the moment's words are plausible but not
    certain; a one-sided sign test over the pairs whose counts of boosted tokens differ.
    """
    import torch

    from bot.config import Settings
    from bot.llm import EngineConfig, TransformersLLM, boost_processor

    gemma = await asyncio.to_thread(
        TransformersLLM.load, EngineConfig(cache_dir=Settings(_env_file=None).model_cache_dir, progress=False)
    )
    try:
        moment = "I adore mangoes, pineapples, coconuts and papayas from the tropical islands"
        ids = gemma.word_token_ids(words(moment), exclude=("\nhippobot:",))
        assert ids and all(i not in gemma._tokenizer.all_special_ids for t in ids.values() for i in t)
        from memory.resonance.scoring import token_boosts

        boosts = token_boosts({w: 0.3 for w in ids}, ids)
        assert max(boosts.values()) <= MAX_BOOST
        prompt = "ana: Name your favourite fruits.\nhippobot: My favourite fruits are"
        model, tok = gemma._model, gemma._tokenizer
        inputs = tok([prompt] * 128, return_tensors="pt").to(next(model.parameters()).device)
        target = torch.tensor(sorted(boosts))

        def sample(with_boosts: bool) -> list[int]:
            torch.manual_seed(1234)
            processors = [boost_processor(boosts, target.device)] if with_boosts else []
            with torch.inference_mode():
                out = model.generate(
                    **inputs,
                    max_new_tokens=4,
                    do_sample=True,
                    temperature=0.7,
                    top_p=0.9,
                    top_k=None,
                    repetition_penalty=1.15,
                    logits_processor=processors,
                    pad_token_id=tok.pad_token_id,
                )
            new = out[:, inputs["input_ids"].shape[1] :]
            return torch.isin(new, target).sum(dim=1).tolist()

        base, boosted = await asyncio.to_thread(sample, False), await asyncio.to_thread(sample, True)
    finally:
        gemma.close()
    wins = sum(b > a for a, b in zip(base, boosted))
    losses = sum(b < a for a, b in zip(base, boosted))
    n = wins + losses
    p = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n if n else 1.0
    assert sum(boosted) > sum(base), (sum(base), sum(boosted))
    assert p < 0.01, (wins, losses, p, sum(base), sum(boosted))


def test_arousal_reads_punctuation_capitals_and_emoji() -> None:
    calm = arousal("the meeting is at noon")
    assert calm == 0.0
    assert arousal("THIS IS AMAZING!!! 🎉🎉") > 0.8 > arousal("this is nice!") > calm
    assert arousal("") == 0.0
    assert 0.0 <= arousal("x" * 10_000 + "!" * 1000) <= 1.0
    random.seed(3)
    text = "".join(random.choice("aB!? 😀\n") for _ in range(500))
    assert 0.0 <= arousal(text, lambda t: float("nan")) <= 1.0


async def test_the_console_rates_its_last_reply(app: App, resonance: ResonanceLayer, llm: ScriptedLLM) -> None:
    import io

    from bot.console import Console, ConsoleIdentity

    llm.reply = GOOD_REPLY
    out = io.StringIO()
    script = io.StringIO("/bad\nWhat did you get for Christmas?\n/good\n")
    await Console(
        app.brain, ConsoleIdentity("ana", "console", SCOPE), script, out, io.StringIO(), interactive=False
    ).run()
    text = out.getvalue()
    assert "no reply to rate yet" in text  # /bad before any reply
    assert "noted: good" in text and "quality 0.75" in text
    assert await app.db.pool.fetchval("SELECT quality FROM resonance_moments") == pytest.approx(0.75)
