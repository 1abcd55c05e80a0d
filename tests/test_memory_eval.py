"""The memory evaluation's pure parts: metrics on toy data, and the committed data set's integrity."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench.evallib import (
    BM25,
    CATEGORIES,
    DATA_DIR,
    MAX_SHARED,
    NOT_MENTIONED,
    content_words,
    dedupe_ranked,
    exact_match,
    hits_at,
    load_conversation,
    load_questions,
    normalize_answer,
    percentile,
    rrf,
    select,
    shared_fraction,
    token_f1,
)

# --- metrics on toy data -------------------------------------------------------------------------------------


def test_hits_at_counts_any_and_all_within_k_only() -> None:
    ranked = [("a",), ("b", "c"), ("d",)]
    assert hits_at(ranked, ["c"], 1) == (False, False)
    assert hits_at(ranked, ["c"], 2) == (True, True)
    assert hits_at(ranked, ["a", "d"], 2) == (True, False)
    assert hits_at(ranked, ["a", "d"], 3) == (True, True)
    assert hits_at(ranked, [], 3) == (False, False)


def test_dedupe_ranked_keeps_first_rank() -> None:
    assert dedupe_ranked([("a", "b"), ("b",), ("c", "a")]) == ["a", "b", "c"]


def test_rrf_prefers_documents_ranked_well_by_both() -> None:
    fused = rrf([[1, 2, 3], [3, 2, 1], [2]], k=60)
    assert fused[0] == 2
    assert rrf([[5, 6]], k=60, limit=1) == [5]


def test_bm25_ranks_the_rare_matching_word_first() -> None:
    docs = ["the cat sat on the mat", "dogs and cats", "a beagle puppy named Biscuit", "the weather is nice"]
    bm = BM25(docs)
    assert bm.top("what is the beagle called", 2)[0] == 2
    assert bm.top("cats", 4)[:2] == [0, 1] or bm.top("cats", 4)[:2] == [1, 0]
    assert bm.scores("zebra") == {}


def test_answer_scores_use_squad_normalisation() -> None:
    assert normalize_answer("The  Beagle!") == "beagle"
    assert exact_match("a beagle.", "Beagle") == 1.0
    assert exact_match("beagle puppy", "beagle") == 0.0
    assert token_f1("a beagle puppy", "beagle") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("", "beagle") == 0.0


def test_percentile_interpolates() -> None:
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile([10], 95) == 10


def test_shared_fraction_folds_plurals_and_ignores_stopwords() -> None:
    assert content_words("What are the dogs called?") == {"dog", "called"}
    assert shared_fraction("What breed is Maya's dog?", "my new dog is a beagle") == pytest.approx(1 / 3)


# --- the committed data set --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> tuple[dict[str, list], list]:
    convs = {p.stem: load_conversation(p) for p in sorted(DATA_DIR.glob("conv-*.jsonl"))}
    return convs, load_questions(DATA_DIR / "questions.jsonl")


def test_conversations_have_the_promised_shape(data) -> None:
    convs, _ = data
    assert len(convs) >= 10
    for conv, turns in convs.items():
        assert 300 <= len(turns) <= 700, conv
        assert 2 <= len({t.speaker for t in turns}) <= 4, conv
        assert 15 <= len({t.id.split(":")[1] for t in turns}) <= 30, conv
        assert [t.timestamp for t in turns] == sorted(t.timestamp for t in turns), conv


def test_records_are_importable_json_lines() -> None:
    line = (DATA_DIR / "conv-00.jsonl").read_text(encoding="utf-8").splitlines()[0]
    record = json.loads(line)
    assert set(record) >= {"id", "channel", "author", "timestamp", "text"}
    assert set(record["author"]) == {"id", "name"}


def test_ids_are_unique(data) -> None:
    convs, questions = data
    ids = [t.id for turns in convs.values() for t in turns]
    assert len(ids) == len(set(ids))
    assert len({q.qid for q in questions}) == len(questions)


def test_every_evidence_id_exists_in_its_own_conversation(data) -> None:
    convs, questions = data
    for q in questions:
        ids = {t.id for t in convs[q.conv]}
        assert all(e in ids for e in q.evidence), q.qid


def test_questions_are_paraphrases_of_their_evidence(data) -> None:
    convs, questions = data
    text = {t.id: t.text for turns in convs.values() for t in turns}
    for q in questions:
        for e in q.evidence:
            assert shared_fraction(q.question, text[e]) <= MAX_SHARED, (q.qid, q.question, text[e])


def test_adversarial_questions_and_only_they_have_no_evidence(data) -> None:
    _, questions = data
    for q in questions:
        assert (q.category == "adversarial") == (not q.evidence), q.qid
        if q.category == "adversarial":
            assert q.answer == NOT_MENTIONED
    assert all(len(q.evidence) >= 2 for q in questions if q.category == "multi_hop")


def test_splits_are_by_conversation_with_every_category_in_both(data) -> None:
    _, questions = data
    assert len(questions) >= 500
    split_of: dict[str, set[str]] = {}
    for q in questions:
        split_of.setdefault(q.conv, set()).add(q.split)
    assert all(len(s) == 1 for s in split_of.values())
    counts = Counter((q.split, q.category) for q in questions)
    for split in ("dev", "heldout"):
        for category in CATEGORIES:
            assert counts[split, category] > 0, (split, category)
    assert select(questions, "heldout", 1)[0].conv == "conv-06"
    assert {q.split for q in select(questions, "dev")} == {"dev"}


def test_words_curve_takes_its_budgets_or_the_default_ones() -> None:
    from bench.memory_eval import WORDS_CURVE, parse_args

    assert parse_args([]).words_curve is None
    assert parse_args(["--words-curve"]).words_curve == list(WORDS_CURVE)
    assert parse_args(["--words-curve", "120", "300"]).words_curve == [120, 300]
