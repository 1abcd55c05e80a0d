"""Names as people write them: several words ("Blue Tuesday", "the Blue Note club") and several names for one
kind of thing ("Pepper and Salt") are stored whole (P7: a band named Blue and one named Tuesday, a gig "at Note
club", and "what are my cats called?" answered with one cat)."""

from __future__ import annotations

import pytest

from memory.extract import TripleExtractor


@pytest.fixture(scope="module")
def extractor() -> TripleExtractor:
    return TripleExtractor()


def facts(extractor: TripleExtractor, text: str) -> set[tuple[str, str, str]]:
    return {(t.subject, t.relation, t.object) for t in extractor.extract(text)}


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I play bass in a jazz band called Blue Tuesday", ("jazz band", "named", "blue tuesday")),
        ("our gig is at the Blue Note club on Saturday", ("gig", "is_at", "blue note club")),
        ("I have a dog called Big Ben", ("dog", "named", "big ben")),
    ],
)
def test_a_name_of_several_words_is_one_name(extractor: TripleExtractor, text: str, fact: tuple[str, str, str]) -> None:
    got = facts(extractor, text)
    assert fact in got, got
    assert not {f for f in got if f[1] == fact[1] and f != fact and f[2] in fact[2].split()}, got


def test_each_of_several_names_names_the_thing(extractor: TripleExtractor) -> None:
    assert {("cat", "named", "pepper"), ("cat", "named", "salt")} <= facts(
        extractor, "I have two cats called Pepper and Salt"
    )
    assert {("cat", "named", "pepper"), ("cat", "named", "salt")} <= facts(
        extractor, "I have two cats, Pepper and Salt"
    )
    got = facts(extractor, "I have a cat called Miso and a Dog")
    assert ("cat", "named", "miso") in got and ("cat", "named", "dog") not in got


def test_greetings_and_asides_make_no_facts(extractor: TripleExtractor) -> None:
    """P12: `mine` showed "you is nice", "you meets me" and "you is by way" from "hi! I'm Sam, nice to meet you" and
    "I'm allergic to peanuts, by the way."; the facts those sentences hold stay."""
    assert facts(extractor, "hi! I'm Sam, nice to meet you") == {("user", "is", "sam")}
    said = facts(extractor, "By the way, I have three cats: Luna, Pixel and Mochi.")
    assert ("user", "has", "cat") in said and not any(o == "way" for _, _, o in said), said
    assert ("user", "is_allergic_to", "peanut") in facts(extractor, "I'm allergic to peanuts, by the way.")
    assert facts(extractor, "I'm so happy to see you") == set()
    # meeting someone, and liking to, are facts
    assert ("user", "meet", "tom") in facts(extractor, "I met Tom at the gym")
    assert ("user", "love_meet", "people") in facts(extractor, "I love to meet new people")
