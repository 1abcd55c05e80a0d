"""Defects a black-box probe (P5) found in replies: a number answer passed as no answer at all, a place in a
question about one's own things made it someone else's, and a person typed in lower case who was forgotten (or never
named) got an invented phone number."""

from __future__ import annotations

from bot.app import App
from bot.grounding import NOT_MENTIONED, NOT_TOLD_YOU, answer_words, guard
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, memory, tell


_item = memory


def test_a_number_is_an_answer() -> None:
    """scikit-learn's stop words hold "two": "how many cats do I have?" "Two." carried no answer words and passed."""
    assert answer_words("Two.", "how many cats do I have?") == {"two"}


async def test_another_persons_cats_are_not_the_askers(app: App, llm: ScriptedLLM) -> None:
    await tell(
        app, llm, ("bea", "I have two cats, Pepper and Salt."), ("alex", "My dog is called Biscuit, he is a beagle.")
    )
    reply = await ask_as(app, llm, "alex", "how many cats do I have?", "Two.")
    assert reply.text == NOT_TOLD_YOU


def test_a_place_in_a_question_about_ones_own_things_leaves_them_ones_own() -> None:
    """ "when is my flight to Paris?" by bea was answered from carl's Tokyo flight: Paris is no person."""
    carl = _item("carl: We are flying to Tokyo on December 20.", 1, "u-carl")
    g = guard("when is my flight to Paris?", [carl], people=[])
    assert g.own


def test_a_person_typed_in_lower_case_whom_no_memory_mentions_is_missing() -> None:
    """ "what is ben's phone number?" after ben was forgotten got "8974325623.": the parse takes ben for a person,
    the capitals did not."""
    g = guard("what is ben's phone number?", [_item("ana: the bike is red", 1, "u-ana")], people=["ben"])
    assert g.refusal == NOT_MENTIONED.format(names="ben")
    mentioned = guard("what is ben's phone number?", [_item("ana: ben plays trumpet", 1, "u-ana")], people=["ben"])
    assert mentioned.about_memory and mentioned.refusal is None and mentioned.named == {"ben"}


async def test_an_answer_from_memory_is_decoded_greedily_and_chat_is_sampled(app: App, llm: ScriptedLLM) -> None:
    """The console samples at temperature 0.7: "what is my cat called?" (Miso told) came out "Milo." in 2 of 4
    fresh chats and was refused. A question about memory is decoded greedily; chat keeps the temperature."""
    await tell(app, llm, ("alex", "My cat is called Miso."))
    llm.greedy.clear()
    await ask_as(app, llm, "alex", "what is my cat called?", "Miso.")
    await ask_as(app, llm, "alex", "tell me a joke about penguins", "Why did the penguin cross the ice?")
    assert llm.greedy == [True, False]


async def test_a_reply_the_model_left_empty_says_so(app: App, llm: ScriptedLLM) -> None:
    """P6: a long message in chat got "hippobot: " with nothing after it, 2 of 3 times."""
    from bot.brain import NOTHING_TO_SAY
    from tests.test_brain import turn

    llm.reply = ""
    reply = await app.brain.respond(turn("word " * 1599 + "endx"))
    assert "".join([d async for d in reply]) == NOTHING_TO_SAY and reply.text == NOTHING_TO_SAY
    await app.brain.drain()
    stored = await app.db.pool.fetchval("SELECT content FROM messages WHERE is_bot ORDER BY id DESC LIMIT 1")
    assert stored == NOTHING_TO_SAY
    asked = await ask_as(app, llm, "alex", "what is my cat called?", "")
    assert asked.text == NOTHING_TO_SAY
