"""The real bundled Gemma 3 270M, end to end (converted once per machine, then ~3 s to load)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.app import App
from bot.brain import IncomingTurn
from bot.config import Settings
from bot.llm import EngineConfig, TransformersLLM
from memory.embed import MiniLMEmbedder
from tests.conftest import make_settings

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def gemma() -> Iterator[TransformersLLM]:
    cache = Settings(_env_file=None).model_cache_dir  # shared with `hippobot chat`: convert once
    llm = TransformersLLM.load(EngineConfig(cache_dir=cache, max_new_tokens=8, seed=7, progress=False))
    yield llm
    llm.close()


async def test_the_brain_answers_with_the_bundled_model(
    db_url: str, tmp_path: Path, embedder: MiniLMEmbedder, gemma: TransformersLLM
) -> None:
    app = await App.open(make_settings(db_url, tmp_path), with_llm=True, llm=gemma, embedder=embedder)
    app.llm = None  # the module fixture owns the model; App.close must not stop it
    try:
        reply = await app.brain.respond(
            IncomingTurn(scope="g1", source="console", channel_id="c1", author_id="u1", author_name="ana",
                         text="Hi! I adopted a cat called Miso last spring.")
        )
        deltas = [d async for d in reply]
        assert reply.text.strip() and "".join(deltas).strip() == reply.text.strip()
        assert "\nana:" not in reply.text and "\nhippobot:" not in reply.text
        assert 1 <= reply.trace.tokens <= 8
        assert reply.mean_surprise is not None and reply.mean_surprise > 0
        assert reply.trace.first_token_s is not None
        await app.brain.drain()
        assert await app.db.pool.fetchval("SELECT count(*) FROM episodes WHERE surprise > 0") == 1
    finally:
        await app.close()


async def test_token_boosts_raise_exactly_the_chosen_ids(gemma: TransformersLLM) -> None:
    """With greedy decoding, a large boost on one token makes the model say it."""
    target = gemma.token_ids(" banana")[0]
    generation = gemma.generate("The capital of France is", max_new_tokens=1, boosts={target: 100.0})
    text = await generation.complete()
    assert text == "banana"
    assert generation.stats.mean_surprise is not None and generation.stats.mean_surprise > 5, (
        "surprise is measured under the unboosted model"
    )
