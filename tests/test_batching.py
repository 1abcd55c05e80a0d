"""Batched recall: the embedder's cache of short texts, the extractor's batch parse, and the layers' prepare hook."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from bot.app import App
from memory.embed import CACHED_CHARS, MiniLMEmbedder
from memory.extract import TripleExtractor
from memory.layers.base import BaseLayer, RecallQuery, Section


class CountingEmbedder(MiniLMEmbedder):
    """The real model, counting the texts that reach it."""

    def __init__(self, shared: MiniLMEmbedder) -> None:
        super().__init__()
        self._model, self._onnx = shared._model, shared._onnx
        self.encoded: list[str] = []

    def encode_sync(self, texts: list[str]) -> np.ndarray:
        self.encoded += texts
        return super().encode_sync(texts)


async def test_short_texts_are_embedded_once_and_answers_keep_their_order(embedder: MiniLMEmbedder) -> None:
    embedder.load()
    counting = CountingEmbedder(embedder)
    long_text = "a sentence long enough to stay out of the cache " * 3
    assert len(long_text) > CACHED_CHARS
    first = await counting.embed_many(["Omar", "pastime", long_text])
    again = await counting.embed_many(["pastime", "bike", "Omar", long_text])
    assert counting.encoded == ["Omar", "pastime", long_text, "bike", long_text]  # the long text twice
    np.testing.assert_allclose(again[0], first[1], atol=1e-6)
    np.testing.assert_allclose(again[2], first[0], atol=1e-6)
    np.testing.assert_allclose(again[3], first[2], atol=1e-6)
    np.testing.assert_allclose(again[1], embedder.encode_sync(["bike"])[0], atol=1e-5)
    all_cached = await counting.embed_many(["Omar", "bike"])
    assert len(counting.encoded) == 5
    all_cached[0] += 1.0  # what callers get is theirs to change: the cache is not touched
    np.testing.assert_allclose((await counting.embed_many(["Omar"]))[0], first[0], atol=1e-6)
    single = await counting.embed("pastime")
    np.testing.assert_allclose(single, first[1], atol=1e-6)


def test_a_batch_parse_gives_the_mentions_one_parse_would() -> None:
    texts = ["What pastime has Omar picked up?", "where does my sister live?", "did you see Rex, my dog?"]
    batch, single = TripleExtractor(), TripleExtractor()
    batch.mentions_many(texts)
    assert [batch.mentions(t) for t in texts] == [single.mentions(t) for t in texts]
    assert batch.mentions(texts[0]) is not batch.mentions(texts[0])  # callers get their own lists


class Preparing(BaseLayer):
    name = "preparing"

    def __init__(self, fail: bool = False) -> None:
        self.prepared: list[list[str]] = []
        self.fail = fail

    async def prepare(self, texts: Sequence[str]) -> None:
        self.prepared.append(list(texts))
        if self.fail:
            raise RuntimeError("prepare broke")

    async def recall(self, query: RecallQuery) -> Section | None:
        return None


@pytest.mark.parametrize("fail", [False, True])
async def test_a_batch_of_recalls_is_prepared_once_and_a_failing_prepare_costs_nothing(app: App, fail: bool) -> None:
    layer = Preparing(fail)
    app.brain.recall.layers = [*app.brain.recall.layers, layer]
    queries = [("what is my cat called?", "g1"), ("where does Lena live?", "g1")]
    bundles = await app.brain.contexts(queries, k=5)
    assert len(bundles) == 2
    assert layer.prepared == [[q for q, _ in queries]]
    await app.brain.contexts(queries[:1], k=5)  # one query: nothing to batch
    assert len(layer.prepared) == 1


def test_an_import_chunk_is_parsed_in_one_batch_and_extracted_the_same() -> None:
    """Absorption of an import parses each chunk with spaCy's pipe once (Absorber.prepare); extraction from the
    parsed documents gives what parsing each text gives."""
    extractor = TripleExtractor()
    texts = ["My sister Lena lives in Lisbon", "I adopted a grey cat called Miso", "We moved to Porto in May"]
    expected = [extractor.extract(t) for t in texts]
    nlp = extractor._pipeline()

    class Counting:
        calls = 0

        def __call__(self, text: str):
            Counting.calls += 1
            return nlp(text)

        def pipe(self, texts, **kw):
            return nlp.pipe(texts, **kw)

    extractor._nlp = Counting()
    extractor.parse_many(texts)
    assert [extractor.extract(t) for t in texts] == expected
    assert Counting.calls == 0  # every text came from the batch
    extractor.extract("a text nobody parsed ahead")
    assert Counting.calls == 1
