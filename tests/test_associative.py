"""HEI-NW's associative index (memory/associative.py): sparse codes, Hopfield completion, audiences, staleness."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bot.app import App
from bot.brain import IncomingTurn
from memory.associative import AssociativeConfig, AssociativeIndex
from memory.layers.episodes import EpisodesLayer

SCOPE = "g1"


def turn(text: str, *, channel: str = "c1", visible_in: str | None = None) -> IncomingTurn:
    return IncomingTurn(
        scope=SCOPE,
        source="console",
        channel_id=channel,
        author_id="u-ana",
        author_name="ana",
        text=text,
        visible_in=visible_in,
    )


async def say(app: App, *texts: str, **kw: str) -> None:
    for text in texts:
        reply = await app.brain.respond(turn(text, **kw))
        await reply.complete()
    await app.brain.drain()


def test_codes_are_sparse_and_keep_neighbours_close() -> None:
    index = AssociativeIndex(None, AssociativeConfig(width=1024, winners=48))
    rng = np.random.default_rng(0)
    a = rng.standard_normal(384).astype(np.float32)
    near, far = a + 0.2 * rng.standard_normal(384).astype(np.float32), rng.standard_normal(384).astype(np.float32)
    codes = index.encode(np.stack([a, near, far]))
    assert (np.count_nonzero(codes, axis=1) <= 48).all()
    assert np.allclose(np.linalg.norm(codes, axis=1), 1.0, atol=1e-5)
    assert codes[0] @ codes[1] > 0.5 > codes[0] @ codes[2]  # pattern separation keeps the near one near


def test_hopfield_completion_moves_a_noisy_cue_towards_its_stored_pattern() -> None:
    index = AssociativeIndex(None, AssociativeConfig(hopfield_beta=16.0, hopfield_mix=1.0))
    rng = np.random.default_rng(1)
    stored = rng.standard_normal((20, 384)).astype(np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    cue = stored[3] + 0.8 * rng.standard_normal(384).astype(np.float32) / np.sqrt(384) * 10
    cue /= np.linalg.norm(cue)
    completed = index.complete(cue, stored)
    assert completed @ stored[3] > cue @ stored[3]


async def test_search_respects_the_audience_and_follows_edits_and_forgetting(app: App) -> None:
    await say(app, "my sister lives in Lisbon and teaches maths", "the weather is grey today")
    await say(app, "the mods are planning a secret giveaway", channel="mods", visible_in="mods")
    layer = app.brain.layer("episodes")
    assert isinstance(layer, EpisodesLayer)
    index = AssociativeIndex(app.db.pool)
    v = await app.embedder.embed("ana: where does my sister live?")
    public = await index.search(SCOPE, v, 10, visible_channel="c1")
    private = await index.search(SCOPE, v, 10, visible_channel="mods")
    giveaway = await app.db.pool.fetchval("SELECT id FROM messages WHERE content LIKE '%giveaway%'")
    sister = await app.db.pool.fetchval("SELECT id FROM messages WHERE content LIKE '%Lisbon%'")
    assert giveaway not in {h.message_id for h in public} and giveaway in {h.message_id for h in private}
    assert public[0].message_id == sister
    # forgetting: the next search rebuilds from PostgreSQL and the message is gone
    await app.provenance.forget_message(SCOPE, sister)
    assert sister not in {h.message_id for h in await index.search(SCOPE, v, 10, visible_channel="c1")}
    assert await AssociativeIndex(app.db.pool).search("nobody-here", v, 5) == []


async def test_the_layer_fuses_the_list_when_switched_on(app: App) -> None:
    await say(app, "my sister lives in Lisbon and teaches maths", "the weather is grey today")
    layer = app.brain.layer("episodes")
    assert isinstance(layer, EpisodesLayer)
    layer.config = replace(layer.config, associative=True)
    bundle = await app.brain.context("where does my sister live?", SCOPE, channel_id="c9")
    section = bundle.section("episodes")
    assert section is not None and "Lisbon" in section.items[0].text
