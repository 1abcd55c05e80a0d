"""The reader adapter: a LoRA on the bundled Gemma 3 270M that answers from the memory section of the prompt.

Trained by ``bench/reader_pack.py`` on a GPU (or ``bench/train_reader.py`` on a CPU; data and licences:
``bench/reader_data.py`` and NOTICE) and shipped here in two
forms: peft (``adapter_config.json`` + ``adapter_model.safetensors``, float16) for the transformers engine and
the dream's distillation, and a llama.cpp GGUF LoRA (``adapter.gguf``) for the default engine. Both engines
apply it by default to the bundled model only (``HIPPOBOT_READER=off`` runs the base model as shipped); a
model of the person's own (``HIPPOBOT_MODEL``) never gets it.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

GGUF_NAME = "adapter.gguf"
MANIFEST = "manifest.json"


def reader_dir() -> Path | None:
    """The shipped adapter's directory, or None when this install has none (a checkout before training)."""
    path = Path(str(resources.files("bot.reader")))
    return path if (path / "adapter_config.json").exists() and (path / GGUF_NAME).exists() else None


def fingerprint(path: Path) -> str:
    """A short hash of the adapter's weights: caches derived from it (a merged model) are keyed by it."""
    digest = hashlib.sha256((path / "adapter_model.safetensors").read_bytes()).hexdigest()
    return digest[:12]


def manifest(path: Path) -> dict:
    try:
        return json.loads((path / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
