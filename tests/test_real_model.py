"""The real bundled Gemma 3 270M, end to end (converted once per machine, then ~3 s to load)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
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
            IncomingTurn(
                scope="g1",
                source="console",
                channel_id="c1",
                author_id="u1",
                author_name="ana",
                text="Hi! I adopted a cat called Miso last spring.",
            )
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


@pytest.mark.slow
async def test_a_lora_adapter_loads_through_peft(tmp_path: Path, gemma: TransformersLLM) -> None:
    """An adapter saved by peft is applied at load time and changes nothing it should not."""
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    base_dir = Settings(_env_file=None).model_cache_dir / "gemma-3-270m-bf16"
    base = AutoModelForCausalLM.from_pretrained(base_dir)
    peft_model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    adapter = tmp_path / "adapter"
    peft_model.save_pretrained(str(adapter))
    assert (adapter / "adapter_config.json").exists()

    cache = Settings(_env_file=None).model_cache_dir
    llm = TransformersLLM.load(EngineConfig(cache_dir=cache, lora_adapter=adapter, max_new_tokens=3, progress=False))
    try:
        assert llm.name.endswith("+ LoRA adapter")
        assert isinstance(llm._model, PeftModel)
        text = await llm.generate("My cat is called", max_new_tokens=3).complete()
        assert text.strip()
    finally:
        llm.close()


async def test_the_abstain_bias_lands_on_the_word_that_opens_i_dont_know(
    db_url: str, tmp_path: Path, embedder: MiniLMEmbedder, gemma: TransformersLLM
) -> None:
    """HIPPOBOT_READER_ABSTAIN_BIAS moves the engine's token " don" ("I don't know..."), never the name " Don"."""
    app = await App.open(
        make_settings(db_url, tmp_path, reader_abstain_bias=-3.0), with_llm=True, llm=gemma, embedder=embedder
    )
    app.llm = None  # the module fixture owns the model
    try:
        assert app.brain._abstain_tokens() == (gemma.token_ids(" don")[0],)
        assert gemma.token_ids(" Don")[0] not in app.brain._abstain_tokens()
    finally:
        await app.close()


async def test_greedy_decoding_ignores_the_configured_temperature(
    gemma: TransformersLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transformers engine decodes greedily when asked, whatever its temperature and seed."""
    monkeypatch.setattr(gemma, "_config", replace(gemma._config, temperature=5.0, top_p=1.0, seed=None))
    prompt = "ana: what is my cat called?\nhippobot:"
    greedy = [await gemma.generate(prompt, max_new_tokens=4, greedy=True).complete() for _ in range(2)]
    sampled = [await gemma.generate(prompt, max_new_tokens=4).complete() for _ in range(2)]
    assert greedy[0] and len(set(greedy)) == 1
    assert set(sampled) != {greedy[0]}, "without greedy the configured temperature samples"
