"""Resonant recall's arithmetic (seed 000, "Santa Klaus"): which moments resonate, and the boosts they give.

    score = 0.4 * token Jaccard + 0.2 * theme overlap + 0.2 * arousal proximity + 0.2 * quality

damped twice, as in the original project: a moment made or recalled in the
last 24 hours counts up to half less (so the bot does not echo what it has
just said), and one recalled often counts ``1 / (1 + uses / 5)``. The top 5
above 0.1 win. A moment must share a word or a theme with the message:
without that, arousal and quality alone (up to 0.4) would let every moment
pass the threshold and the boosts would be noise. Boosts are
``alpha * count / max_count`` over the winners' words (count: how many
winners use the word), alpha 0.3, never more than +0.3 in log space.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.resonance.features import clamp, jaccard

W_TOKENS, W_THEMES, W_AROUSAL, W_QUALITY = 0.4, 0.2, 0.2, 0.2
TOP_K = 5
THRESHOLD = 0.1
# A moment resonates only once people showed it went well: someone answered it (quality 2/3), rated it up
# (3/4) or more. Unrated (1/2) and merely carried on from (3/5) are not enough: an unrated reply may be an
# invention ("an orange cat named Pidgey"), and boosting its words makes the bot repeat it (issue 28).
MIN_QUALITY = 0.65
ALPHA = 0.3
MAX_BOOST = 0.3  # log space: at most x1.35 on a token's probability
RECENT = timedelta(hours=24)
RECENCY_PENALTY = 0.5
USE_DAMPING = 5.0


@dataclass(frozen=True)
class Probe:
    """The message as resonance sees it."""

    words: frozenset[str]
    themes: frozenset[str]
    arousal: float
    now: datetime


@dataclass(frozen=True)
class Candidate:
    """A stored moment as scoring needs it."""

    id: int
    words: tuple[str, ...]
    themes: tuple[str, ...]
    arousal: float
    quality: float
    uses: int
    created_at: datetime
    last_used_at: datetime | None = None


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    score: float
    overlap: float
    theme_overlap: float


def score(probe: Probe, c: Candidate) -> Scored | None:
    """The damped score of one moment, or None when it shares neither a word nor a theme with the message."""
    overlap = jaccard(probe.words, frozenset(c.words))
    # the archetype ('@name') is a theme, but sharing only it is not resonance
    theme_overlap = jaccard(probe.themes, frozenset(c.themes))
    if overlap == 0.0 and not (probe.themes & {t for t in c.themes if not t.startswith("@")}):
        return None
    arousal_score = max(0.0, 1.0 - abs(clamp(probe.arousal) - clamp(c.arousal)))
    raw = W_TOKENS * overlap + W_THEMES * theme_overlap + W_AROUSAL * arousal_score + W_QUALITY * clamp(c.quality)
    return Scored(c, raw * recency_factor(c, probe.now) / (1.0 + max(c.uses, 0) / USE_DAMPING), overlap, theme_overlap)


def recency_factor(c: Candidate, now: datetime) -> float:
    """1.0 for a moment neither made nor recalled in the last 24 hours; down to 0.5 for one just made or used."""
    latest = max(c.created_at, c.last_used_at) if c.last_used_at is not None else c.created_at
    age = (now - latest) / RECENT
    return 1.0 - RECENCY_PENALTY * max(0.0, min(1.0, 1.0 - age))


def select(
    probe: Probe, candidates: Sequence[Candidate], *, k: int = TOP_K, threshold: float = THRESHOLD
) -> list[Scored]:
    """The best ``k`` moments people showed went well (``MIN_QUALITY``) scoring above ``threshold``, best first
    (ties: the newer first)."""
    scored = [
        s for c in candidates if c.quality >= MIN_QUALITY and (s := score(probe, c)) is not None and s.score > threshold
    ]
    scored.sort(key=lambda s: (s.score, s.candidate.created_at, s.candidate.id), reverse=True)
    return scored[:k]


def word_weights(winners: Sequence[Scored], *, alpha: float = ALPHA) -> dict[str, float]:
    """``alpha * count / max_count`` per word of the winners (count: how many winners use it)."""
    counts: Counter[str] = Counter(w for s in winners for w in set(s.candidate.words))
    if not counts:
        return {}
    top = max(counts.values())
    return {w: min(MAX_BOOST, alpha * n / top) for w, n in counts.items()}


def token_boosts(weights: Mapping[str, float], ids: Mapping[str, Sequence[int]]) -> dict[int, float]:
    """Word weights onto the engine's token ids (a token shared by words takes the largest), capped at +0.3."""
    out: dict[int, float] = {}
    for word, weight in weights.items():
        for token in ids.get(word, ()):
            out[token] = min(MAX_BOOST, max(out.get(token, 0.0), weight))
    return {t: b for t, b in out.items() if b > 0.0}
