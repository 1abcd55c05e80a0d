"""A "yes" to a yes/no question about something remembered must be what a memory says (found by the new-user
probe: with "Tom works as a nurse" remembered, "Is Tom a doctor?" got "Yes, he is." eight times in twelve). The
reply carries no answer words, so grounding by words let it through; the question's own words are the claim."""

from __future__ import annotations

import pytest

from bot.app import App
from bot.grounding import NOT_TOLD, NOT_TOLD_YOU, claim_of, grounded_or_not_told, guard
from memory.layers.base import MemoryItem
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, memory, tell


_item = memory


NURSE = _item("ana: Tom works as a nurse at St Mary's")
LISBON = _item("ana: Julia flew to Lisbon for a week in May")


@pytest.mark.parametrize(
    ("question", "memory", "held"),
    [
        ("Is Tom a doctor?", NURSE, False),
        ("Is Tom a nurse?", NURSE, True),
        ("does tom work at St Mary's?", NURSE, True),
        ("Did Julia visit Lisbon?", LISBON, True),
        ("Did Julia visit Porto?", LISBON, False),  # a name the memory does not hold is no half-match
        ("Did Tom visit Lisbon?", LISBON, False),  # the memory is of someone else
    ],
)
def test_a_yes_must_find_the_question_in_one_memory(question: str, memory: MemoryItem, held: bool) -> None:
    claim = claim_of(question)
    assert claim is not None and claim.held_in([memory]) is held


@pytest.mark.parametrize(
    "question",
    [
        "Would Tom enjoy a night shift?",
        "Is Tom likely to change jobs?",
        "Could Julia go back to Lisbon?",
        "where does Tom work?",
        "Tom is a doctor",
        "do you like tea?",
    ],
)
def test_a_judgement_a_wh_question_or_a_statement_makes_no_claim(question: str) -> None:
    assert claim_of(question) is None


@pytest.mark.parametrize(
    ("reply", "shown"), [("Yes, he is.", False), ("Yes.", False), ("No, he's a nurse.", True), ("I don't know.", True)]
)
def test_an_unheld_yes_is_not_shown_and_other_replies_go_by_their_words(reply: str, shown: bool) -> None:
    g = guard("Is Tom a doctor?", [NURSE], people=["Tom"])
    assert g.about_memory and g.claim is not None
    out = grounded_or_not_told(reply, "Is Tom a doctor?", [NURSE], claim=g.claim)
    assert out == (reply if shown else NOT_TOLD)


def test_a_lower_case_question_about_someone_remembered_is_checked_too() -> None:
    g = guard("is tom a doctor?", [NURSE])
    assert g.about_memory and g.claim is not None and not g.whether


async def test_an_invented_yes_about_someone_remembered_is_not_shown(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("ana", "Tom works as a nurse at St Mary's"))
    reply = await ask_as(app, llm, "bo", "Is Tom a doctor?", "Yes, he is.")
    assert reply.text == NOT_TOLD
    reply = await ask_as(app, llm, "bo", "Is Tom a nurse?", llm.reply)
    assert reply.text == "Yes, he is."


async def test_a_yes_about_the_askers_own_things_must_be_theirs(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("alex", "my dog is called Biscuit"))
    reply = await ask_as(app, llm, "newbie", "is my dog called Biscuit?", "Yes.")
    assert reply.text == NOT_TOLD_YOU
    reply = await ask_as(app, llm, "alex", "is my dog called Biscuit?", llm.reply)
    assert reply.text == "Yes."


def test_a_held_yes_loses_what_no_memory_holds() -> None:
    """ "Is Tom a nurse?" "Yes, she's an RN.": the yes is remembered, RN is not (the reader adds such words)."""
    claim = claim_of("Is Tom a nurse?")
    assert grounded_or_not_told("Yes, she's an RN.", "Is Tom a nurse?", [NURSE], claim=claim) == "Yes."
    assert grounded_or_not_told("Yes, at St Mary's.", "Is Tom a nurse?", [NURSE], claim=claim) == "Yes, at St Mary's."


async def test_a_bare_yes_shows_the_memory_that_holds_it(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("ana", "Tom works as a nurse at St Mary's"))
    reply = await ask_as(app, llm, "bo", "Is Tom a nurse?", "Yes, she's an RN.")
    assert reply.text == "Yes."
    lines = await app.brain.source_lines("g1", reply.grounding())
    assert [s.author for s in lines] == ["ana"]


BEAGLE = _item("alex: My dog is called Biscuit, he is a beagle.", 7, "u-alex")
PILOT = _item("carl: My wife Julia is a pilot.", 8, "u-carl")


@pytest.mark.parametrize(
    ("question", "memory", "held"),
    [
        ("is my dog a poodle?", BEAGLE, False),  # P5: "Yes." citing the beagle message, 3/3
        ("is my dog a beagle?", BEAGLE, True),
        ("Is my wife a doctor?", PILOT, False),  # P5: "Yes, she is!", 2/3
        ("Is my wife a pilot?", PILOT, True),
        ("Is Tom's wife a doctor?", _item("ana: Tom's wife is a pilot", 9), False),
    ],
)
def test_what_a_yes_no_question_asks_of_its_subject_is_its_last_word(
    question: str, memory: MemoryItem, held: bool
) -> None:
    claim = claim_of(question)
    assert claim is not None and claim.held_in([memory]) is held, claim


async def test_a_yes_that_repeats_the_question_shows_the_memory_that_holds_it(app: App, llm: ScriptedLLM) -> None:
    """ "is my dog a beagle?" "Yes, he is a beagle." carries no answer words (beagle is the question's), so no
    source was shown under a yes the memory holds."""
    await tell(app, llm, ("alex", "My dog is called Biscuit, he is a beagle."))
    reply = await ask_as(app, llm, "alex", "is my dog a beagle?", "Yes, he is a beagle.")
    assert reply.text == "Yes, he is a beagle."
    assert [s.author for s in await app.brain.source_lines("g1", reply.grounding())] == ["alex"]
