"""Kinds of things a question may ask for by kind ("what pets does dev have?") while the memory names the things
themselves ("I adopted a rabbit called Turnip and a turtle called Shelly"): which kind a word is, by MiniLM's
cosine to a one-line description of each kind, the best when it is clear. The reader's training data sorts its
answers into the same kinds (bench/reader_data.py ``answer_kinds``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from memory.embed import Embedder

KIND_DESCRIPTIONS = {
    "sport": "a sport or athletic activity",
    "instrument": "a musical instrument",
    "music": "a kind of music, a band or a singer",
    "food": "a food, dish or drink",
    "animal": "an animal or pet",
    "show": "a film, tv show or book",
    "game": "a video game or board game",
}
# The words by which a question names a kind (stems, as bot.grounding's ``stem`` leaves them), from general English.
KIND_WORDS: Mapping[str, str] = {
    "sport": "sport",
    "instrument": "instrument",
    "music": "music",
    "band": "music",
    "singer": "music",
    "food": "food",
    "dish": "food",
    "meal": "food",
    "drink": "food",
    "animal": "animal",
    "pet": "animal",
    "film": "show",
    "movie": "show",
    "series": "show",
    "book": "show",
    "novel": "show",
    "game": "game",
}
# A word is of a kind when its best description's cosine is at least LEAST and MARGIN ahead of the next one; the
# bars bench/reader_data.py sorted its answers with. Words checked when they were chosen: rabbit, turtle, parrot,
# hamster, dog -> animal; guitar, cello -> instrument; pizza, coffee -> food; chess -> game; carpet, startup,
# sister, job, weather -> none.
LEAST = 0.3
MARGIN = 0.05


def kinds_asked(topic: Iterable[str]) -> set[str]:
    """The kinds a question's words (stems) name: {"animal"} for "what pets does dev have?"."""
    return {KIND_WORDS[w] for w in topic if w in KIND_WORDS}


async def word_kinds(embedder: Embedder, words: Iterable[str]) -> dict[str, str]:
    """Each of ``words`` (as written) that is clearly of one kind -> that kind."""
    texts = sorted({w for w in words if w})
    if not texts:
        return {}
    vectors = np.asarray(await embedder.embed_many([*texts, *KIND_DESCRIPTIONS.values()]))
    sims = vectors[: len(texts)] @ vectors[len(texts) :].T
    names = list(KIND_DESCRIPTIONS)
    out = {}
    for text, row in zip(texts, sims, strict=True):
        order = row.argsort()[::-1]
        if row[order[0]] >= LEAST and row[order[0]] - row[order[1]] >= MARGIN:
            out[text] = names[order[0]]
    return out
