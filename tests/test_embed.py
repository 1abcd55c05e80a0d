"""MiniLM's two runtimes: ONNX Runtime (the default on CPU) gives sentence-transformers' vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory.embed import MiniLMEmbedder

TEXTS = [
    "",
    "hi",
    "Do you remember where my sister lives?",
    "Maya: I finally repaired the bike chain, then we went to Rotterdam and it rained all weekend",
    "Ünïcödé 日本語 🙂 ok",
    "word " * 400,  # past the 256-token limit: truncated the same way
    "what's my job again?",
]


@pytest.fixture(scope="module")
def torch_embedder() -> MiniLMEmbedder:
    e = MiniLMEmbedder(backend="torch")
    e.load()
    return e


def test_onnx_vectors_match_sentence_transformers(embedder: MiniLMEmbedder, torch_embedder: MiniLMEmbedder) -> None:
    embedder.load()
    assert embedder.backend == "onnx"  # onnxruntime is a dependency: the default must not fall back
    onnx, ref = embedder.encode_sync(TEXTS), torch_embedder.encode_sync(TEXTS)
    assert onnx.shape == ref.shape == (len(TEXTS), 384) and onnx.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(onnx * ref, axis=1))) > 1 - 1e-4
    # a batch gives what one text at a time gives (padding never leaks into the mean)
    alone = np.stack([embedder.encode_sync([t])[0] for t in TEXTS])
    np.testing.assert_allclose(onnx, alone, atol=1e-5)


def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="backend"):
        MiniLMEmbedder(backend="tpu")  # type: ignore[arg-type]  # a backend it does not know, on purpose


def test_without_a_usable_onnx_file_auto_falls_back_and_onnx_says_why(
    tmp_path: Path, torch_embedder: MiniLMEmbedder
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the cache directory should be")
    auto = MiniLMEmbedder(cache_dir=blocked)
    auto.load()
    assert auto.backend == "torch"
    np.testing.assert_allclose(auto.encode_sync(["hi"]), torch_embedder.encode_sync(["hi"]), atol=1e-6)
    with pytest.raises(OSError):
        MiniLMEmbedder(backend="onnx", cache_dir=blocked).load()


@pytest.mark.slow
def test_a_new_machine_exports_the_onnx_file_once_and_reuses_it(tmp_path: Path, torch_embedder: MiniLMEmbedder) -> None:
    fresh = MiniLMEmbedder(backend="onnx", cache_dir=tmp_path)
    fresh.load()  # nothing cached here: exported from the bundled model, checked against PyTorch
    [exported] = list(tmp_path.glob("*.onnx"))
    assert list(tmp_path.iterdir()) == [exported]  # no temporary or external-data file left behind
    stamp = exported.stat().st_mtime_ns
    again = MiniLMEmbedder(backend="onnx", cache_dir=tmp_path)
    again.load()
    assert exported.stat().st_mtime_ns == stamp  # the second start reads the file, it does not export again
    vectors = again.encode_sync(TEXTS)
    assert float(np.min(np.sum(vectors * torch_embedder.encode_sync(TEXTS), axis=1))) > 1 - 1e-4
