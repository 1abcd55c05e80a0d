"""A tiny distillation on the bundled Gemma (a few steps): the candidate, its evaluation, its GGUF form, and
both engines switching to it and back between generations."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.config import Settings
from bot.distill import STEPS, TIME_LIMIT, Distiller, DistillSettings, heldout_text
from bot.llm import EngineConfig, LanguageModel, TransformersLLM, ensure_bundled_model
from bot.llm_llamacpp import LORA_GGUF, LlamaCppLLM
from memory.layers.weights import AdapterRef, Cloze, TrainingText

pytestmark = pytest.mark.model

CACHE = Settings(_env_file=None).model_cache_dir  # shared with `hippobot chat`: converted once
FACTS = [("Ana's sister lives in", "Lisbon"), ("Ben works at", "Brightwave"), ("Chloe's dog is named", "Pepper")]
PROMPT = "Ana's sister lives in"


@pytest.fixture(scope="module")
def candidate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    texts = [TrainingText("fact", f"{p} {a}.", (i,)) for i, (p, a) in enumerate(FACTS)]
    texts += [
        TrainingText("episode", "ana: my sister moved to Lisbon last spring\nhippo: how does she like it?", (9,)),
        TrainingText("turn", "ben: lunch at noon?\nchloe: sure", (10, 11)),
    ]
    questions = [Cloze(p, a) for p, a in FACTS]
    distiller = Distiller(
        lambda: str(ensure_bundled_model(CACHE, progress=False)),
        base_model="bundled",
        settings=DistillSettings(max_steps=3, batch_size=2, max_tokens=32, budget_s=120, max_ppl_regression=10.0),
    )
    out = tmp_path_factory.mktemp("adapters") / "a1"
    outcome = distiller.distill(texts, questions, None, out)
    yield out, outcome.metrics
    shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slow
def test_a_candidate_is_written_with_its_evaluation(candidate: tuple[Path, dict]) -> None:
    out, m = candidate
    assert (out / "adapter_config.json").exists() and (out / "adapter_model.safetensors").exists()
    assert (out / LORA_GGUF).stat().st_size > 100_000, "the llama.cpp form"
    assert (out / "manifest.json").exists()
    assert m["steps"] == 3 and m["loss_last"] < m["loss_first"], "it learned something"
    for key in ("em_base", "em_current", "em_candidate", "delta_em", "ppl_base", "ppl_candidate", "ppl_ratio"):
        assert key in m
    assert 0.0 <= m["em_candidate"] <= 1.0 and m["ppl_base"] > 1.0 and heldout_text()


def test_the_verdict_gates_on_recall_and_perplexity() -> None:
    d = Distiller("unused", base_model="x", settings=DistillSettings(min_delta_em=0.05, max_ppl_regression=0.05))
    good = {
        "em_current": 0.1,
        "em_candidate": 0.3,
        "delta_em": 0.2,
        "ppl_base": 30.0,
        "ppl_candidate": 31.0,
        "ppl_ratio": 31 / 30,
    }
    assert d.verdict(good)[0]
    assert not d.verdict({**good, "delta_em": 0.0, "em_candidate": 0.1})[0], "no better at recall"
    passed, reason = d.verdict({**good, "ppl_candidate": 33.0, "ppl_ratio": 1.1})
    assert not passed and "perplexity" in reason


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-layer Gemma 3 of random weights with the bundled tokenizer: the training loop, not what it learns."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    bundled = ensure_bundled_model(CACHE, progress=False)
    out = tmp_path_factory.mktemp("tiny")
    config = Gemma3TextConfig(
        vocab_size=262144,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        sliding_window=64,
        max_position_embeddings=512,
    )
    Gemma3ForCausalLM(config).save_pretrained(str(out))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(bundled) / name, out / name)
    return out


def _distil_on_a_busy_machine(model: Path, out: Path, **settings: float) -> tuple[dict, str]:
    """A distillation whose every training step takes 57 s (the clock says so), as on a machine that trained 6
    steps in 342 s."""
    ticks = itertools.count(0.0, 57.0)
    texts = [TrainingText("fact", f"{p} {a}.", (i,)) for i, (p, a) in enumerate(FACTS)]
    chosen: dict = {"batch_size": 2, "max_tokens": 16, "check_every": 4, "max_ppl_regression": 10.0, **settings}
    distiller = Distiller(
        str(model), base_model="tiny", load_in_4bit=False, clock=lambda: next(ticks), settings=DistillSettings(**chosen)
    )
    outcome = distiller.distill(texts, [Cloze(p, a) for p, a in FACTS], None, out)
    return outcome.metrics, outcome.reason


@pytest.mark.slow
def test_the_budget_is_in_steps_however_slow_each_step_is(tiny_model: Path, tmp_path: Path) -> None:
    m, reason = _distil_on_a_busy_machine(tiny_model, tmp_path / "a", max_steps=8)
    assert m["steps_run"] == m["steps"] == 8 and m["stopped_by"] == STEPS, "8 x 57 s is under the safety stop"
    assert m["train_s"] == 8 * 57
    assert "8 of 8 steps kept, 8 trained in 456 s" in reason


def test_the_time_limit_is_a_safety_stop_and_says_so(tiny_model: Path, tmp_path: Path) -> None:
    m, reason = _distil_on_a_busy_machine(tiny_model, tmp_path / "a", max_steps=8, budget_s=120)
    assert m["steps_run"] == m["steps"] == 3 and m["stopped_by"] == TIME_LIMIT  # 171 s after the third step
    assert "3 of 8 steps kept, 3 trained in 171 s" in reason and "120 s safety limit" in reason


async def _greedy(llm: LanguageModel, adapter: AdapterRef | None) -> tuple[str, float]:
    gen = llm.generate(PROMPT, adapter=adapter, max_new_tokens=6)
    text = await gen.complete()
    assert gen.stats.mean_surprise is not None, "a generation that wrote tokens measured their surprise"
    return text, gen.stats.mean_surprise


@pytest.mark.parametrize("engine", ["llamacpp", "transformers", "llamacpp+reader"])
@pytest.mark.slow
async def test_an_engine_switches_to_the_adapter_and_back(
    engine: str, candidate: tuple[Path, dict], tmp_path: Path
) -> None:
    """A scope's adapter goes on and off between generations; on llama.cpp it stacks on the reader adapter,
    which stays on underneath (the dream distils on the reader-merged model)."""
    from bot.reader import reader_dir

    config = EngineConfig(
        cache_dir=CACHE,
        max_new_tokens=6,
        temperature=0.0,
        progress=False,
        reader=reader_dir() if engine.endswith("+reader") else None,
    )
    llm = LlamaCppLLM.load(config, threads=2) if engine.startswith("llamacpp") else TransformersLLM.load(config)
    try:
        assert llm.supports_adapters
        copy = tmp_path / "a1"
        shutil.copytree(candidate[0], copy)
        ref = AdapterRef(1, copy)
        base = await _greedy(llm, None)
        adapted = await _greedy(llm, ref)
        assert adapted[1] != pytest.approx(base[1], abs=1e-4), "the adapter changes the model's distribution"
        again = await _greedy(llm, None)
        assert again[0] == base[0] and again[1] == pytest.approx(base[1], abs=1e-5), "back to the base model"
        again = await _greedy(llm, ref)
        assert again[0] == adapted[0] and again[1] == pytest.approx(adapted[1], abs=1e-5)
        shutil.rmtree(copy)  # tainted or rolled back: its files go, and the engine lets go of it
        again = await _greedy(llm, ref)
        assert again[0] == base[0] and again[1] == pytest.approx(base[1], abs=1e-5)
        assert llm._adapter_key is None
    finally:
        llm.close()
