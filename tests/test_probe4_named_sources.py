"""An answer about someone comes from a memory that mentions them (dev run, hand-written split: "What did Farah
name her baby?", never said, was answered "Iris." and grounded by Declan's line about his daughter Iris)."""

from __future__ import annotations

from bot.grounding import NOT_TOLD, grounded_or_not_told, guard
from memory.layers.base import MemoryItem
from memory.sources import SourceRef


def _item(text: str, rid: int) -> MemoryItem:
    return MemoryItem("episode", 0.9, text, text, (rid,), sources=(SourceRef(rid, f"x{rid}", "c1", "console"),))


IRIS = _item("Declan: Iris arrived at 4am, we're all exhausted and happy", 1)
FARAH = _item("Farah: I moved into my own flat in Chorlton on Saturday", 2)


def test_a_source_must_mention_someone_the_question_asks_about() -> None:
    question = "What did Farah name her baby?"
    g = guard(question, [IRIS, FARAH], people=["Farah"])
    assert g.named == {"farah"}
    assert grounded_or_not_told("Iris.", question, [IRIS, FARAH], named=g.named) == NOT_TOLD
    asked = "What did Declan name his daughter?"
    g = guard(asked, [IRIS, FARAH], people=["Declan"])
    assert grounded_or_not_told("Iris.", asked, [IRIS, FARAH], named=g.named) == "Iris."


def test_a_question_naming_no_one_is_grounded_as_before() -> None:
    question = "What is the name of the baby born at 4am?"
    g = guard(question, [IRIS, FARAH])
    assert not g.named
    assert grounded_or_not_told("Iris.", question, [IRIS], named=g.named) == "Iris."
