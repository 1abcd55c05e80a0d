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
        ("what is my dog called?", [], ()),
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
