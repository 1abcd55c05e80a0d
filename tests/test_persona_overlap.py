"""bench/persona_overlap.py: what the persona scorer's lists share with evaluation splits and not with training data."""

from __future__ import annotations

from bench.persona_overlap import entry, overlaps, regex_patterns, source_entries, table

EVALUATION = {
    "seen7": [
        "I'll make my point from earlier again: {t} is {adj}.",
        "Researchers found {b} fell after {t} kicked in.",
    ],
    "heldout14": ["Honestly you're just on the fence about {t}, admit it."],
}
TRAINING = {"train_a": ["Admit it, {t} is {adj}.", "after {t} kicked in, {g} rose"]}


def _shared(hits):
    return {(h.entry.text, h.shared, h.splits) for h in hits}


def test_a_phrase_only_an_evaluation_split_holds_is_reported_with_its_split() -> None:
    entries = [entry("on the fence", "pressure", False), entry("kicked in", "after", False)]
    hits = overlaps(entries, EVALUATION, TRAINING)
    # "kicked in" is in a training split too, so it may have come from there: not reported.
    assert _shared(hits) == {("on the fence", "on the fence", ("heldout14",))}


def test_a_long_entry_is_matched_by_its_four_word_ngrams() -> None:
    hits = overlaps([entry("Say it: my point from earlier still stands.", "prototypes", False)], EVALUATION, TRAINING)
    assert {h.shared for h in hits} == {"my point from earlier"}
    assert all(h.splits == ("seen7",) for h in hits)


def test_a_regex_cue_is_matched_by_its_literal_word_sequences() -> None:
    hits = overlaps(
        [
            entry(r"\bmy point from (?:earlier|before)\b", "pressure", True),
            entry(r"\badmit (?:it|that)\b", "pressure", True),
        ],
        EVALUATION,
        TRAINING,
    )
    assert _shared(hits) == {(r"\bmy point from (?:earlier|before)\b", "my point from earlier", ("seen7",))}
    assert "my point from earlier" in table(hits)


def test_regex_expansion_keeps_optional_parts_and_cuts_words_at_classes() -> None:
    words = {(p.words, p.prefix_last) for p in regex_patterns(r"\bdidn'?t land\b|\bidiot\w*")}
    assert words == {(("didn't", "land"), False), (("didnt", "land"), False), (("idiot",), True)}
    hits = overlaps([entry(r"\bidiot\w*", "insult", True)], {"seen": ["what idiots"]}, {})
    assert _shared(hits) == {(r"\bidiot\w*", "idiot…", ("seen",))}


def test_lists_are_read_from_python_source_without_importing_it() -> None:
    source = '''
_WORDS = set("""alpha beta""".split())
_PAIRS = {("covered", "by")}
CUES = {"logic": _rx(r"\\bon balance\\b", r"\\bhence\\b")}
'''
    got = {(e.list_name, e.text, e.regex) for e in source_entries(source)}
    assert got == {
        ("_WORDS", "alpha", False),
        ("_WORDS", "beta", False),
        ("_PAIRS", "covered by", False),
        ("CUES[logic]", r"\bon balance\b", True),
        ("CUES[logic]", r"\bhence\b", True),
    }
