"""Salience of an imported message, from the message itself (cheap, deterministic, no LLM).

A live turn's salience comes from the write gate (the reply's surprise and the
message's novelty). An imported message has no reply and no surprise, and
scoring it 0 made the dream cycle forget most of an imported history. Here
its salience is calibrated from what it says:

- information content: how many content words it has (saturating);
- named entities and numbers: capitalised words inside a sentence, digits
  ("my dentist is Dr. Okafor on Elm Street", "the flight is at 7:40");
- self-disclosure ("my", "I'm", "we have"): facts about people are what a
  companion is asked about later;
- questions count a little;
- novelty among the imported batch: a line said again and again is worth less;
- greetings and acknowledgements ("ok", "lol", "good morning", "thanks!")
  stay low whatever else holds.

Salience is in [0, 1]. Decay (dream.replay) forgets only trivia, below
``TRIVIA`` and long unreinforced.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

TRIVIA = 0.2  # below this an episode is trivia: what decay may forget (see DreamConfig.trivia_salience)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_NUMBER = re.compile(r"\d")
_SELF = re.compile(r"\b(my|mine|i['’]m|i am|i have|i['’]ve|i live|i work|we have|we['’]re|our)\b", re.I)
# Whole-message chit-chat: greetings, acknowledgements, laughter, reactions.
_SMALL_TALK = frozenset(
    """
    ok okay k kk okk yes yeah yep yup ya yea no nope nah sure cool nice great good fine awesome perfect alright
    lol lmao lmfao rofl haha hahaha hehe heh xd omg wow whoa oh ah hmm hm uh um same true right exactly indeed
    thanks thank thx ty tysm cheers np yw welcome please pls plz sorry hi hello hey heya yo hiya sup morning
    evening night afternoon gm gn bye cya later brb gtg ttyl afk back here everyone all guys folks y'all you too
    me agreed agree +1 lgtm done congrats congratulations happy love it this that is was so very much really
    a the and to of indeed totally definitely absolutely see soon one
""".split()
)
_STOP = frozenset(
    """
    a an the and or but if so to of in on at by for with from up down out over under again then once here there
    when where why how all any both each few more most other some such no nor not only own same than too very
    can will just don should now is are was were be been being have has had having do does did doing i me my we
    our you your he him his she her it its they them their what which who whom this that these those am would
    could get got let make want need like im it's i'm that's there's what's
""".split()
)


def content_words(text: str) -> set[str]:
    """What a text says, as a set: its words less stop words and words under three letters, lower case, each
    cut to its first five letters ("kilometres" and "kilometre" are one word)."""
    lowered = (w.lower() for w in _WORD.findall(text))
    return {w[:5] for w in lowered if len(w) > 2 and w not in _STOP}


def imported_salience(text: str, novelty: float | None = None) -> float:
    """Salience in [0, 1] of one imported message, from its text and its novelty in [0, 1]
    among the imported batch (None: unknown, counted as middling)."""
    words = _WORD.findall(text)
    lowered = [w.lower() for w in words]
    nov = 0.5 if novelty is None or not math.isfinite(novelty) else min(max(novelty, 0.0), 1.0)
    if not words or all(w in _SMALL_TALK for w in lowered):
        return round(0.05 * nov, 4)  # chit-chat: trivia, whatever its novelty
    content = [w for w in lowered if w not in _STOP and len(w) > 2]
    information = 1.0 - math.exp(-len(content) / 5.0)
    # Capitalised words that do not start a sentence, and numbers: names, places, dates, amounts.
    starts = {m.end() for m in re.finditer(r"(^|[.!?]\s+)", text)}
    entities = sum(
        1
        for m in _WORD.finditer(text)
        if m.group()[0].isupper() and m.start() not in starts and m.group().lower() not in ("i", "i'm", "i’m")
    )
    entities += len(_NUMBER.findall(text)) > 0
    score = (
        0.35 * information
        + 0.2 * min(entities / 2.0, 1.0)
        + 0.1 * bool(_SELF.search(text))
        + 0.05 * ("?" in text)
        + 0.3 * nov
    )
    if len(content) <= 1:  # "the weather!" or "see you soon": little said
        score = min(score, TRIVIA - 0.05)
    return round(min(max(score, 0.0), 1.0), 4)


def batch_novelty(vectors: np.ndarray, *, chunk: int = 256) -> np.ndarray:
    """Per row of L2-normalised ``vectors``: 1 - its highest cosine to any other row, in [0, 1]
    (1.0 for a batch of one). Chunked: memory stays O(chunk x n)."""
    v = np.asarray(vectors, dtype=np.float32)
    n = len(v)
    if n <= 1:
        return np.ones(n, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, chunk):
        sims = v[start : start + chunk] @ v.T
        rows = np.arange(sims.shape[0])
        sims[rows, rows + start] = -1.0  # not itself
        out[start : start + chunk] = 1.0 - sims.max(axis=1)
    return np.clip(out, 0.0, 1.0)


def imported_saliences(texts: Sequence[str], vectors: np.ndarray) -> list[float]:
    """Salience of each message of an imported batch (texts with their L2-normalised vectors).

    CPU work proportional to the batch squared: call it through ``asyncio.to_thread``.
    """
    novelty = batch_novelty(vectors) if len(texts) else np.zeros(0, dtype=np.float32)
    return [imported_salience(t, float(n)) for t, n in zip(texts, novelty)]


# Replay priority (seed 001, 5.3): lambda1 * salience + lambda2 * recency + lambda3 * diversity.
LAMBDA_SALIENCE, LAMBDA_RECENCY, LAMBDA_DIVERSITY = 0.5, 0.3, 0.2
RECENCY_DAYS = 7.0


def replay_order(salience: np.ndarray, age_days: np.ndarray, vectors: np.ndarray, k: int) -> list[int]:
    """Indices of the k episodes to replay, highest priority first (greedy, diversity-aware)."""
    recency = np.exp(-age_days / RECENCY_DAYS)
    base = LAMBDA_SALIENCE * salience + LAMBDA_RECENCY * recency
    chosen: list[int] = []
    nearest = np.full(len(salience), -1.0, dtype=np.float32)  # highest cosine to any chosen so far
    for _ in range(min(k, len(salience))):
        diversity = 1.0 - np.clip(nearest, 0.0, 1.0) if chosen else np.ones(len(salience))
        score = base + LAMBDA_DIVERSITY * diversity
        score[chosen] = -math.inf
        pick = int(np.argmax(score))
        chosen.append(pick)
        nearest = np.maximum(nearest, vectors @ vectors[pick])
    return chosen
