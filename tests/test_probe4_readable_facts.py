"""Facts shown to people read as English (found by the new-user probe: `hippobot mine` and recall listed "Tom work
as nurse"). The graph keeps the lemma ("work as"), which its vectors and the reader's prompt lines were made from;
what people read agrees with its subject."""

from __future__ import annotations

import pytest

from memory.semantic import Fact, third_person


@pytest.mark.parametrize(
    ("relation", "said"),
    [
        ("work as", "works as"),
        ("live in", "lives in"),
        ("not like", "does not like"),
        ("has", "has"),
        ("is from", "is from"),
        ("named", "named"),
        ("watch", "watches"),
        ("study", "studies"),
        ("play", "plays"),
        ("go to", "goes to"),
        ("have", "has"),
        ("not has", "does not have"),  # P8's fact display: "ben does not has boat"
        ("not is", "is not"),
    ],
)
def test_a_relation_agrees_with_someone_else_as_its_subject(relation: str, said: str) -> None:
    assert third_person(relation) == said


def _fact(subject_name: str, subject: str) -> Fact:
    return Fact(
        edge_id=1,
        subject=subject,
        subject_name=subject_name,
        relation="work_as",
        object="nurse",
        object_name="nurse",
        sentiment=0.0,
        confidence=1.0,
        evidence=1,
        retrievability=1.0,
        message_ids=(),
        speakers=(),
    )


def test_people_read_an_agreeing_verb_and_the_prompt_keeps_the_graphs_words() -> None:
    tom = _fact("tom", "tom")
    assert tom.sentence(readable=True) == "tom works as nurse"
    assert tom.sentence() == "tom work as nurse", "its vector and the reader's prompt lines"
    assert _fact("bot", "hippobot").sentence(readable=True) == "I work as nurse"
