"""A layer from its own package (tests/example_layer) joins the app by one registration entry and takes part in
recall, absorption, forgetting and the dream, with no edit to the app, Recall, the absorber or the dream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import App
from bot.brain import IncomingTurn
from memory.embed import MiniLMEmbedder
from tests.conftest import close_or_explain, make_settings
from tests.example_layer import ExampleLayer
from tests.fakes import ScriptedLLM


@pytest.fixture
async def example_app(db_url: str, tmp_path: Path, embedder: MiniLMEmbedder, llm: ScriptedLLM) -> AsyncIterator[App]:
    a = await App.open(
        make_settings(db_url, tmp_path), with_llm=True, llm=llm, embedder=embedder, layers=[ExampleLayer]
    )  # the one registration line
    yield a
    await close_or_explain(a)


async def say(app: App, text: str, *, channel: str = "c1", visible_in: str | None = None) -> int:
    """A person's message answered and absorbed; its stored id."""
    reply = await app.brain.respond(IncomingTurn("g1", "console", channel, "u-ana", "ana", text, visible_in=visible_in))
    await reply.complete()
    await app.brain.drain()
    return await app.db.pool.fetchval("SELECT id FROM messages WHERE content = $1", text)


async def test_a_layer_in_its_own_package_takes_part_in_absorption_recall_the_dream_and_forgetting(
    example_app: App,
) -> None:
    app = example_app
    said = await say(app, "I grow tomatoes on my balcony")
    assert await app.db.pool.fetchval("SELECT words FROM example_notes WHERE message_id = $1", said) == 6  # absorbed

    section = (await app.brain.context("what do I grow?", "g1")).section("example")  # recalled
    assert section is not None and [item.message_ids for item in section.items] == [(said,)]

    report = await app.dream.run(datetime.now(UTC), scope="g1")  # dreamt
    step = report.steps["example_tally"]
    assert step.error is None and step.counts == {"tallied": 1}
    assert await app.db.pool.fetchval("SELECT dreamt_at FROM example_notes WHERE message_id = $1", said) is not None

    forgot = await app.provenance.forget_message("g1", said)  # forgotten
    assert forgot.counts["example_notes"] == 1
    assert await app.db.pool.fetchval("SELECT count(*) FROM example_notes") == 0


async def test_the_example_layers_notes_of_a_restricted_channel_stay_there(example_app: App) -> None:
    app = example_app
    secret = await say(app, "the staff password is on the fridge", channel="staff", visible_in="staff")
    public = (await app.brain.context("password", "g1")).section("example")
    assert public is None, "a public audience sees no note of the restricted channel"
    inside = (await app.brain.context("password", "g1", visible_channel="staff")).section("example")
    assert inside is not None and [item.message_ids for item in inside.items] == [(secret,)]
