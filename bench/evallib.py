"""Pure helpers of the memory evaluation: loading, paraphrase check, ranking metrics, BM25, RRF, EM/F1.

Nothing here touches the database or the models, so tests run it on toy data
and bench/memory_data.py (stdlib only) uses the same word rules when it checks
that its questions are paraphrases.
"""

from __future__ import annotations

import json
import math
import re
import string
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data" / "memory_eval"
CATEGORIES = ("single_hop", "multi_hop", "temporal", "open_domain", "adversarial")
NOT_MENTIONED = "not mentioned"
MAX_SHARED = 0.5  # a question may share at most this fraction of its content words with any evidence turn

STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren't as at be because been before being below between
both but by can can't could couldn't did didn't do does doesn't doing don't down during each few for from further
get got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how
how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me more most much my myself no nor
not now of off on once only or other ought our ours ourselves out over own really same she she'd she'll she's should
so some such than that that's the their theirs them themselves then there there's these they they'd they'll they're
they've this those through to too under until up very was wasn't we we'd we'll we're we've were weren't what what's
when when's where where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
you're you've your yours yourself yourselves s t ll re ve d m also yes yeah oh ok okay lol haha gonna wanna kind
one two thing things still even ever well back new
""".split()
)

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _stem(word: str) -> str:
    """A very light stemmer: plural and possessive endings only (so 'dogs' and 'dog' count as one word)."""
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1}


def shared_fraction(question: str, evidence_text: str) -> float:
    """Fraction of the question's content words that also occur in the evidence text."""
    q = content_words(question)
    if not q:
        return 0.0
    return len(q & content_words(evidence_text)) / len(q)


# --- data --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    id: str
    speaker: str
    text: str
    timestamp: str


@dataclass(frozen=True)
class Question:
    qid: str
    conv: str
    category: str
    question: str
    answer: str
    evidence: tuple[str, ...]
    split: str


def load_conversation(path: Path) -> list[Turn]:
    turns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            author = r["author"]
            turns.append(
                Turn(r["id"], author["name"] if isinstance(author, dict) else str(author), r["text"], r["timestamp"])
            )
    return turns


def load_questions(path: Path) -> list[Question]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out.append(
                Question(
                    r["qid"], r["conv"], r["category"], r["question"], r["answer"], tuple(r["evidence"]), r["split"]
                )
            )
    return out


def write_json(path: Path, data: object) -> None:
    """A bench's ``--json`` results, with their folder made if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")


def load_questions_in(directory: Path) -> list[Question]:
    """Every question of a data set's ``questions*.jsonl`` files (one per split, or one for all)."""
    files = sorted(directory.glob("questions*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no questions*.jsonl in {directory}")
    return [q for f in files for q in load_questions(f)]


def select(questions: Sequence[Question], split: str, conversations: int | None = None) -> list[Question]:
    """Questions of ``split`` ('dev', 'heldout' or 'all'), from the first ``conversations`` conversations of it."""
    chosen = [q for q in questions if split == "all" or q.split == split]
    if conversations is not None:
        keep = sorted({q.conv for q in chosen})[:conversations]
        chosen = [q for q in chosen if q.conv in keep]
    return chosen


# --- ranking metrics ---------------------------------------------------------------------------------------


def dedupe_ranked(ranked_sources: Iterable[Sequence[str]]) -> list[str]:
    """Turn ids in rank order from a list of items (each with its source ids), each id kept at its first rank."""
    seen: dict[str, None] = {}
    for sources in ranked_sources:
        for s in sources:
            seen.setdefault(s, None)
    return list(seen)


def hits_at(ranked_items: Sequence[Sequence[str]], evidence: Iterable[str], k: int) -> tuple[bool, bool]:
    """(any, all): whether any / all evidence ids are among the sources of the top ``k`` items."""
    ev = set(evidence)
    found = {s for sources in ranked_items[:k] for s in sources} & ev
    return bool(found), bool(ev) and found == ev


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    lo, hi = math.floor(rank), math.ceil(rank)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


# --- lexical baseline and fusion ---------------------------------------------------------------------------


class BM25:
    """Okapi BM25 over a fixed list of documents (k1 = 1.5, b = 0.75), stopwords dropped, light stemming."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(_stem(w) for w in words(d) if w not in STOPWORDS) for d in documents]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.docs else 0.0
        df: Counter[str] = Counter()
        for c in self.docs:
            df.update(c.keys())
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}
        self.index: dict[str, list[int]] = {}
        for i, c in enumerate(self.docs):
            for w in c:
                self.index.setdefault(w, []).append(i)

    def scores(self, query: str) -> dict[int, float]:
        out: dict[int, float] = {}
        for w in {_stem(w) for w in words(query) if w not in STOPWORDS}:
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i in self.index[w]:
                tf = self.docs[i][w]
                norm = tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg))
                out[i] = out.get(i, 0.0) + idf * norm
        return out

    def top(self, query: str, k: int) -> list[int]:
        s = self.scores(query)
        return sorted(s, key=lambda i: (-s[i], i))[:k]


def rrf(rankings: Sequence[Sequence[int]], *, k: int = 60, limit: int | None = None) -> list[int]:
    """Reciprocal-rank fusion: score(d) = sum over rankings of 1 / (k + rank), rank from 1."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, d in enumerate(ranking, start=1):
            score[d] = score.get(d, 0.0) + 1.0 / (k + rank)
    fused = sorted(score, key=lambda d: (-score[d], d))
    return fused[:limit] if limit is not None else fused


# --- answer scores (SQuAD-style normalisation) ------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, drop punctuation and articles, collapse white space."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def contains_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised gold answer occurs in the normalised prediction (a lenient EM for chatty models)."""
    g = normalize_answer(gold)
    return float(bool(g) and f" {g} " in f" {normalize_answer(prediction)} ")


@asynccontextmanager
async def scratch_database(admin_url: str | None, prefix: str) -> AsyncIterator[str | None]:
    """A throwaway database on the server at ``admin_url`` (its user may create databases), dropped afterwards;
    None when no URL is given (the app then starts the embedded server in its temporary data directory)."""
    if admin_url is None:
        yield None
        return
    import asyncpg

    from memory.db import with_database

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    try:
        yield with_database(admin_url, name)
    finally:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        finally:
            await conn.close()
