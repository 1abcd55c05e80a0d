"""Outcomes a message talks about, and whether people want more or less of them.

Evidence about a policy mostly says that something rose or fell ("desistance from crime fell 19% where it was
adopted"); which way that argues depends on whether the thing is a benefit or a harm. The stance model could
not learn that from a few thousand examples for outcomes it had never seen: it read "fell" as good whatever
fell. So before it reads a message, the outcome phrases are found (noun phrases, joined through their
prepositions: "home ownership among young adults") and the confident ones replaced by "benefits" or "harms",
decided by a small classifier: MiniLM with its own LoRA adapter and a three-way head (harm, neither,
benefit), built like the stance model and trained with it by ``bench/train_persona_stance.py``
(``stance/valence/``). The stance model then only has to read the change and what it happened to.

Trained without seen10 and seen11 (as shipped), the classifier put 0.93 / 0.94 of their outcome phrases on the
right side and 0.01 / 0.03 on the wrong one, and in an earlier run replaced 1 in 130 of their other phrases
(studies, people, places); a logistic regression over the MiniLM sentence vectors got 0.78-0.85 right and
replaced 4-8 % of the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

VALENCE_DIR = "valence"  # beside the stance model's files
BENEFIT, HARM = "benefits", "harms"
LABELS = (-1, 0, 1)  # the classifier's classes: harm, neither, benefit
MIN_PROBABILITY = 0.6  # a phrase is replaced only when its class is at least this likely (of three)

# Prepositions that join a noun phrase to the one it qualifies: "rainfall in drought regions", "take-home pay
# for waiting staff"; not "by" (an amount) nor "than" (a comparison).
_JOINING = {
    "of",
    "in",
    "for",
    "from",
    "on",
    "among",
    "at",
    "to",
    "between",
    "within",
    "across",
    "through",
    "with",
    "about",
    "around",
    "during",
    "amongst",
}
# Heads that frame an outcome rather than being one: "a 25% bump in X", "zero benefit to X", "reports of X".
# The phrase after them is the outcome.
FRAME_HEADS = set(
    """rise fall drop increase decrease reduction decline cut gain gains improvement jump surge growth loss
spike deterioration boost bump uptick dip slump collapse reversal hike climb leap change changes effect effects impact
impacts benefit benefits cost costs harm harms damage risk risks level levels rate rates number numbers share amount
reports report cases case incidence prevalence proportion percentage fraction lot bit kind sort type way evidence
difference trend trends measure measures problem problems issue issues""".split()
)
_STRIP = {"DET", "NUM", "PRON", "PUNCT", "ADP", "CCONJ", "PART", "SYM", "ADV", "SPACE", "X"}
_COMPARATIVES = {
    "more",
    "less",
    "fewer",
    "higher",
    "lower",
    "better",
    "worse",
    "greater",
    "bigger",
    "smaller",
    "longer",
    "shorter",
    "faster",
    "slower",
    "much",
    "many",
    "most",
    "least",
    "fewest",
    "few",
    "same",
    "overall",
    "measurable",
    "average",
    "median",
    "total",
    "net",
    "zero",
    "no",
    "any",
    "some",
    "real",
    "actual",
}
MAX_WORDS = 8
_CHANGE_VERBS = set(
    """cut cuts raise raises raised boost boosts boosted lower lowers lowered reduce reduces reduced
increase increases increased improve improves improved worsen worsens worsened drive drives drove push pushes pushed
bring brings brought halve halves halved double doubles doubled""".split()
)
_COMMON = {"this", "that", "the", "a", "an", "of", "in", "for", "on", "and", "to"}


@dataclass(frozen=True)
class Phrase:
    start: int  # character offsets in the parsed text
    end: int
    text: str


def outcome_phrases(doc: Any, skip: Sequence[str] = ()) -> list[Phrase]:
    """Noun phrases of a parsed message that may be outcomes, joined through their prepositions, without
    determiners, figures or comparatives ("a 12% rise in flash flooding" gives "flash flooding"). Phrases
    that hold one of ``skip`` (the topic, or its mask) and pronouns are left out."""
    skip_words = {w for s in skip for w in s.lower().split() if len(s.split()) > 1 and w not in _COMMON}
    chunks = list(doc.noun_chunks)
    by_root = {c.root.i: c for c in chunks}
    joined_into: set[int] = set()
    spans: list[tuple[int, int]] = []  # token ranges [start, end)
    for chunk in chunks:
        if chunk.root.i in joined_into:
            continue
        start, end = chunk.start, chunk.end
        head = chunk.root
        if head.lemma_.lower() not in FRAME_HEADS and head.lower_ not in FRAME_HEADS:  # "a bump in X": X alone
            while end < len(doc) and doc[end].lower_ in _JOINING:  # "home ownership" + "among young adults"
                # the preposition right after the phrase, whatever the parser hung it on ("fell among X")
                nxt = next((by_root[g.i] for g in doc[end].children if g.dep_ == "pobj" and g.i in by_root), None)
                if nxt is None or nxt.start != end + 1 or nxt.end - start > MAX_WORDS + 3:
                    break
                joined_into.add(nxt.root.i)
                end = nxt.end
        while start < end and (
            doc[start].pos_ in _STRIP
            or doc[start].like_num
            or doc[start].text in ("%", "'s")
            or doc[start].lower_ in _COMPARATIVES
            or not doc[start].text.strip()
        ):
            start += 1
        while end > start and (doc[end - 1].pos_ in ("PUNCT", "PART", "SPACE") or not doc[end - 1].text.strip()):
            end -= 1
        if start >= end or end - start > MAX_WORDS:
            continue
        inside = [i for i in range(chunk.start, end) if doc[i].lower_ in skip_words]
        if inside:  # the parser ran the topic into the phrase ("this policy cut hospital admissions"): after it
            start = max(start, inside[-1] + 1)
            while start < end and doc[start].lower_ in _CHANGE_VERBS:
                start += 1
        whole = doc[start:end].text.lower()
        if any(s and s.lower() in whole for s in skip):
            continue
        span = doc[start:end]
        if not any(t.is_alpha or "-" in t.text for t in span) or span.root.pos_ == "PRON":
            continue
        if span.root.lemma_.lower() in FRAME_HEADS and all(t.pos_ in ("ADJ", "ADV") for t in span if t != span.root):
            continue  # "clear improvement", "early gains": words the stance model reads as they are
        spans.append((start, end))
    return [Phrase(doc[s].idx, doc[e - 1].idx + len(doc[e - 1].text), doc[s:e].text) for s, e in spans]


def labels_of(logits: np.ndarray, min_probability: float = MIN_PROBABILITY) -> list[int]:
    """-1 (a harm), +1 (a benefit) or 0 (neither, or not sure) per row of the classifier's logits (harm,
    neither, benefit)."""
    if not len(logits):
        return []
    z = np.asarray(logits, dtype=np.float32).reshape(len(logits), len(LABELS))
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    best = p.argmax(axis=1)
    return [LABELS[b] if p[i, b] >= min_probability else 0 for i, b in enumerate(best)]


def replace_outcomes(text: str, phrases: Sequence[Phrase], labels: Sequence[int]) -> str:
    """``text`` with each phrase labelled +1 / -1 replaced by "benefits" / "harms"."""
    out = []
    at = 0
    for phrase, label in sorted(zip(phrases, labels), key=lambda x: x[0].start):
        if not label or phrase.start < at:
            continue
        out.append(text[at : phrase.start])
        out.append(BENEFIT if label > 0 else HARM)
        at = phrase.end
    out.append(text[at:])
    return "".join(out)
