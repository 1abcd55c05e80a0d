"""Chat that asks nothing of memory is the model's to answer (P7, P8; bench/chat_declines.py): a question to the
bot among sentences that name people ("Lisbon is gorgeous, Maren and I went there. Have you been?" got "I don't
remember anyone mentioning Maren or Lisbon." from a new user's empty memory), a request to the bot that names the
asker only as "me", and what the asker could do ("what's a quick lunch I can make?"). A question about memory in
the same message still is one."""

from __future__ import annotations

import pytest

from bot.app import App
from bot.grounding import asked_part, asks, guard
from tests.fakes import ScriptedLLM


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


@pytest.mark.parametrize(
    ("message", "asks"),
    [
        ("how are you?", False),
        ("hey, how's it going?", False),
        ("what did you do today?", False),
        ("what's up?", False),
        ("tell me a joke", False),
        ("do you like tea?", False),
        ("how is it going with Tom?", True),
        ("how is my dog doing?", True),
        ("when is the party?", True),
        ("do you remember the party?", True),
        ("have you ever been to Japan?", True),
        ("where does ben teach?", True),
    ],
)
def test_small_talk_is_no_question_of_memory(message: str, asks: bool) -> None:
    """P9, P10: "how are you?" was planned with 12 memories and answered with someone's job ("Working as a nurse at
    St. Mary's hospital."), "tell me a joke" with someone's broken wrist: small talk to the bot asks nothing of
    memory, and the router plans it without (sql/032's small_talk archetype recalls none)."""
    from bot.grounding import asks_of_memory

    assert asks_of_memory(message) is asks


async def test_small_talk_is_planned_without_memory(app: App, llm: ScriptedLLM) -> None:
    """The same, through the router: with people's memories in the scope, "how are you?" is planned by the
    small_talk archetype and recalls none of them; a question about the asker's dog still recalls it."""
    from tests.grounding_support import tell

    await tell(app, llm, ("maya", "I work as a nurse at St. Mary's hospital, night shifts mostly."))
    await tell(app, llm, ("maya", "My dog is called Biscuit, he is a beagle."))
    small = await app.brain.context("how are you?", "g1", author_id="u-maya")
    assert small.plan.archetype == "small_talk", small.plan
    assert not [i for i in small.items(preamble=False) if i.kind in ("episode", "fact", "message")]
    dog = await app.brain.context("what is my dog called?", "g1", author_id="u-maya")
    assert any("Biscuit" in i.text for i in dog.items(preamble=False)), dog.plan
