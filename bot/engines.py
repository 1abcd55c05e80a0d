"""Which language-model engine the bot runs, from its settings.

``HIPPOBOT_ENGINE=auto`` (the default) picks, in order:

1. the OpenAI-compatible client (bot.llm_openai) when ``HIPPOBOT_LLM_URL`` is set;
2. llama.cpp (bot.llm_llamacpp) for the bundled Gemma on CPU with no LoRA adapter: it runs the
   shipped 4-bit GGUF as it is, several times faster than transformers (bench/pipeline.py); and for
   ``HIPPOBOT_MODEL=/path/to/file.gguf``, any GGUF of the person's own, with its own chat template;
3. transformers (bot.llm) otherwise: a configured Hugging Face model, a peft LoRA adapter (the
   dream's consolidation writes peft adapters), or a CUDA GPU.

If llama.cpp was chosen by ``auto`` but cannot load here, the bot logs why and falls back to
transformers; naming an engine explicitly makes such a failure an error.
"""

from __future__ import annotations

import logging
from pathlib import Path

from bot.config import Settings
from bot.llm import EngineConfig, LanguageModel, LLMError, TransformersLLM

log = logging.getLogger(__name__)


def choose_engine(settings: Settings) -> str:
    """The engine ``settings`` ask for: 'openai', 'llamacpp' or 'transformers'."""
    if settings.engine != "auto":
        return settings.engine
    if settings.llm_url:
        return "openai"
    if is_gguf(settings.model) and settings.lora_adapter is None:
        return "llamacpp"
    if settings.model is None and settings.lora_adapter is None and not settings.load_in_4bit and not _cuda():
        from bot.llm_llamacpp import available

        if available():
            return "llamacpp"
        log.warning("llama-cpp-python is not importable here; the bundled model runs on transformers (slower)")
    return "transformers"


def load_engine(settings: Settings, config: EngineConfig) -> LanguageModel:
    """Load the chosen engine (blocking: call it from a thread in async code)."""
    engine = choose_engine(settings)
    if engine == "openai":
        from bot.llm_openai import OpenAICompatibleLLM

        if not settings.llm_url:
            raise LLMError("HIPPOBOT_ENGINE=openai needs HIPPOBOT_LLM_URL")
        return OpenAICompatibleLLM.from_settings(settings)
    if engine == "llamacpp":
        gguf = is_gguf(settings.model)
        if (settings.model is not None and not gguf) or settings.lora_adapter is not None:
            if settings.engine == "llamacpp":
                raise LLMError(
                    "the llama.cpp engine runs the bundled GGUF or a .gguf file; a Hugging Face "
                    "HIPPOBOT_MODEL and HIPPOBOT_LORA_ADAPTER need HIPPOBOT_ENGINE=transformers"
                )
        from bot.llm_llamacpp import LlamaCppLLM

        if gguf:
            path = Path(settings.model or "").expanduser()
            if not path.is_file():
                raise LLMError(f"HIPPOBOT_MODEL={settings.model}: no such GGUF file")
            return LlamaCppLLM.load(config, model_path=path)  # its failure is the person's to see
        try:
            return LlamaCppLLM.load(config)
        except LLMError:
            if settings.engine == "llamacpp":
                raise
            log.warning("llama.cpp could not load the bundled model; falling back to transformers", exc_info=True)
    return TransformersLLM.load(config)


def is_gguf(model: str | None) -> bool:
    """Whether HIPPOBOT_MODEL names a GGUF file (run on llama.cpp) rather than a Hugging Face model."""
    return model is not None and model.strip().lower().endswith(".gguf")


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
