"""Chat that asks nothing of memory is the model's to answer (P7, P8; bench/chat_declines.py): a question to the
bot among sentences that name people ("Lisbon is gorgeous, Maren and I went there. Have you been?" got "I don't
remember anyone mentioning Maren or Lisbon." from a new user's empty memory), a request to the bot that names the
asker only as "me", and what the asker could do ("what's a quick lunch I can make?"). A question about memory in
the same message still is one."""

from __future__ import annotations

import pytest

from bot.grounding import asked_part, asks, guard


@pytest.mark.parametrize(
    ("message", "people"),
    [
        ("Oh amazing. Lisbon is gorgeous, Maren and I went there before the kids. Have you been?", ["Maren"]),
        ("Fado would make me cry. Did you get the custard tarts?", []),
        ("Empty and very clean. Dill sleeps on Theo's bed now. How's your week been?", ["Dill", "Theo"]),
        ("can you cheer me up?", []),
        ("what's a quick lunch I can make at work?", []),
        ("what could I bake this weekend?", []),
        ("tell me a joke", []),  # P9: answered with someone's cats, and their sources
        ("give me a pep talk please", []),
        ("tell me about your day", []),
        ("tell me about yourself!", []),
    ],
)
def test_chat_is_not_a_question_about_memory(message: str, people: list[str]) -> None:
    assert not guard(message, [], people=people).about_memory


@pytest.mark.parametrize(
    ("message", "people", "missing"),
    [
        ("My dog is Rex. What's my dog called?", [], ()),
        ("Lovely weather. Where does Tom live?", ["Tom"], ("Tom",)),
        ("can you remind me what my dog is called?", [], ()),
        ("Name two places Kofi visited.", ["Kofi"], ("Kofi",)),  # an imperative asks as well
        ("what is my dog called?", [], ()),
        ("tell me about my dog", [], ()),
        ("tell me what my dog is called", [], ()),
        ("when does Project Nightjar launch?", [], ()),  # P9: "On November 10.", a half marathon's sources
        ("where is the Casa Lisboa dinner?", [], ()),  # P9: "Saturday (7 November 2026)."
    ],
)
def test_a_question_about_memory_still_is_one(message: str, people: list[str], missing: tuple[str, ...]) -> None:
    g = guard(message, [], people=people)
    assert g.about_memory and g.missing == missing


def test_the_asked_part_of_a_message() -> None:
    assert asked_part("Lisbon is gorgeous. Have you been? We loved it.") == "Have you been?"
    assert asked_part("where does Tom live") == "where does Tom live"
    assert asked_part("I moved. WHAT IS MY CATS NAME") == "WHAT IS MY CATS NAME"
    assert asks("how many cats do I have") and not asks("When I was young I had two cats.")


def test_a_question_in_other_inflections_of_a_memorys_words_is_about_it() -> None:
    """P8: "who is getting banned on Friday?" beside "zedkiller ban is confirmed for Friday" was left to the model,
    which answered with an unrelated memory: "banned" stemmed to "bann", and "getting" asked for a word no one
    said. A doubled consonant before -ed/-ing is one, and the passive's "get" asks nothing."""
    from bot.grounding import stem
    from tests.grounding_support import memory

    assert [stem(w) for w in ("banned", "getting", "running", "planned", "added", "falling", "missed")] == [
        "ban",
        "get",
        "run",
        "plan",
        "add",
        "fall",
        "miss",
    ]
    ban = memory("ana: Staff only: zedkiller ban is confirmed for Friday.")
    assert guard("who is getting banned on Friday?", [ban]).about_memory


def test_a_refusal_names_each_person_once() -> None:
    """P9: after ben was forgotten, "where does ben teach?" got "I don't remember anyone mentioning ben teach or
    ben.": the parse's "ben teach" holds ben."""
    from bot.grounding import shortest_names

    assert shortest_names(["ben teach", "ben", "ben"]) == ("ben",)
    assert shortest_names(["Tom", "Julia Roberts"]) == ("Tom", "Julia Roberts")
    assert guard("where does ben teach?", [], people=["ben teach", "ben"]).refusal == (
        "I don't remember anyone mentioning ben."
    )
