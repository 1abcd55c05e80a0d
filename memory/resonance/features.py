"""What a moment is measured by, from its text alone: words, themes, arousal, length and variety.

Pure functions of strings (no model, no database), fast enough to run on
every message inside the recall budget. Sentiment strength comes from
TextBlob's lexicon when the caller passes its polarity function (loading it
takes a second and a half, so the layer loads it off the event loop).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
MAX_WORDS = 64  # a moment's words kept for scoring and boosts (the seed's max_tokens_per_memory)
REPLY_LEN_NORM = 400  # characters: a reply this long or longer has length 1.0

# Words that carry no theme: overlapping on them says nothing about resonance, boosting them says less.
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren't as at be because been before being below between
both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from
further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his
how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
not of off on once only or other ought our ours ourselves out over own same shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's these they they'd
they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're we've were
weren't what what's when when's where where's which while who who's whom why why's will with won't would wouldn't
you you'd you'll you're you've your yours yourself yourselves yes yeah ok okay oh just also really like get got
one well much many still even thing things know think s t re ve ll d m
""".split()
)
_SUFFIXES = (
    "ations",
    "ation",
    "ingly",
    "ments",
    "ment",
    "ness",
    "ings",
    "ing",
    "ies",
    "ied",
    "ers",
    "er",
    "est",
    "ed",
    "ly",
    "es",
    "s",
)


def words(text: str) -> list[str]:
    """Distinct content words in order of first use, lower case, at most MAX_WORDS."""
    seen: dict[str, None] = {}
    for w in WORD.findall(text.lower()):
        if w not in STOPWORDS and not w.isdigit() or (w.isdigit() and len(w) >= 3):
            seen.setdefault(w, None)
            if len(seen) >= MAX_WORDS:
                break
    return list(seen)


def stem(word: str) -> str:
    """A crude stem, enough to let 'painting' and 'painted' share a theme."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def themes(texts: Iterable[str], archetype: str | None = None) -> list[str]:
    """The themes of some texts: stems of their longer content words, plus the archetype as ``@name``."""
    out: dict[str, None] = {}
    for text in texts:
        for w in words(text):
            if len(w) >= 4 and not w.isdigit():
                out.setdefault(stem(w), None)
    if archetype:
        out.setdefault("@" + archetype, None)
    return list(out)


def jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter) if inter else 0.0


def _is_emoji(ch: str) -> bool:
    return unicodedata.category(ch) == "So" or 0x1F000 <= ord(ch) <= 0x1FAFF


def arousal(text: str, polarity: Callable[[str], float] | None = None) -> float:
    """How charged a text is, in [0, 1]: exclamation and question marks, shouted words, emoji, and the
    strength of its sentiment (|polarity| when ``polarity`` is given)."""
    if not text.strip():
        return 0.0
    letters = [c for c in text if c.isalpha()]
    caps = sum(1 for w in re.findall(r"[A-Za-z]{2,}", text) if w.isupper())
    n_words = max(1, len(WORD.findall(text)))
    bangs = text.count("!") + 0.5 * text.count("?")
    emoji = sum(1 for c in text if _is_emoji(c))
    parts = [
        min(1.0, bangs / 3.0),
        min(1.0, 3.0 * caps / n_words) if letters else 0.0,
        min(1.0, emoji / 2.0),
    ]
    signal = 0.45 * parts[0] + 0.25 * parts[1] + 0.3 * parts[2]
    strength = 0.0
    if polarity is not None:
        try:
            strength = clamp(abs(float(polarity(text))))
        except Exception:  # sentiment is a refinement; punctuation alone still measures arousal
            strength = 0.0
    return clamp(0.6 * signal + 0.4 * strength if polarity is not None else signal)


def reply_len_norm(text: str) -> float:
    return clamp(len(text.strip()) / REPLY_LEN_NORM)


def unique_ratio(text: str) -> float:
    """Distinct words over words (1.0 for no repetition; 0.0 for an empty text)."""
    ws = WORD.findall(text.lower())
    return len(set(ws)) / len(ws) if ws else 0.0


def clamp(value: float | None, low: float = 0.0, high: float = 1.0) -> float:
    """``value`` within [low, high]; None, NaN and infinities are ``low``."""
    if value is None:
        return low
    try:
        v = float(value)
    except (TypeError, ValueError):
        return low
    if not math.isfinite(v):
        return low
    return min(high, max(low, v))
