"""A question about the asker's own things is answered from what the asker said (found by the new-user probe:
alex said "my dog is called Biscuit"; a newcomer asking "what is my dog called?" was told "Biscuit.", six times in
six). Another person's "my dog" says nothing of the asker's dog; only the asker's own words, or a memory that names
the asker, can answer it."""

from __future__ import annotations

import pytest

from bot.app import App
from bot.grounding import NOT_TOLD_YOU, guard, own_items
from memory.layers.base import MemoryItem
from memory.sources import SourceRef
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, memory, tell
from tests.test_brain import say

_item = memory


@pytest.mark.parametrize(
    "question", ["what is my dog called?", "What's my dog's name?", "where did I park?", "is my dog called Biscuit?"]
)
def test_a_question_about_the_askers_own_things_is_theirs(question: str) -> None:
    assert guard(question, [_item("alex: my dog is called Biscuit", 1, "u-alex")]).own


@pytest.mark.parametrize(
    "question",
    [
        "can you tell me what alex's dog is called?",
        "what is Tom's dog called?",
        "what did I tell Tom about Lisbon?",
        "what are we doing on friday?",
        "what is the capital of France?",
    ],
)
def test_a_question_about_someone_else_or_a_group_is_not(question: str) -> None:
    """ "me" is the asker as the one told, not the one asked about; a named person is someone else; "we" a group."""
    people = [p for p in ("alex", "Tom") if p in question]  # the parse's people: those the question names
    assert not guard(question, [_item("alex: my dog is called Biscuit", 1, "u-alex")], people=people).own


def test_only_the_askers_words_or_a_memory_naming_them_answer_it() -> None:
    alex = _item("alex: my dog is called Biscuit", 1, "u-alex")
    mine = _item("sam: my dog is called Pico", 2, "u-sam")
    about = _item("bo: sam's dog Pico chewed my shoe", 3, "u-bo")
    unknown = MemoryItem(
        "note", None, "a dog called Rex", "a dog called Rex", (4,), sources=(SourceRef(4, "x4", "c1", "console"),)
    )
    assert own_items([alex, mine, about, unknown], "u-sam", "sam") == [mine, about]


async def test_a_newcomer_is_not_told_another_persons_dog_as_their_own(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("alex", "my dog is called Biscuit"))
    reply = await ask_as(app, llm, "newbie", "what is my dog called?", "Biscuit.")  # read in alex's memory
    assert reply.text == NOT_TOLD_YOU
    assert not reply.grounding().items, "no source line under the refusal"


async def test_the_asker_is_answered_from_their_own_words_with_their_source(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("alex", "my dog is called Biscuit"), ("sam", "my dog is called Pico"))
    reply = await ask_as(app, llm, "sam", "what is my dog called?", "Pico.")
    assert reply.text == "Pico."
    lines = await app.brain.source_lines("g1", reply.grounding())
    assert [s.author for s in lines] == ["sam"]
    reply = await ask_as(app, llm, "sam", "what is my dog called?", "Biscuit.")  # the other dog: not theirs
    assert reply.text == 'You told me: "my dog is called Pico"', "not alex's dog: sam's own words instead"


async def test_in_a_chat_too(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("alex", "my dog is called Biscuit"))
    llm.reply = "Biscuit."
    assert await say(app, "what is my dog called?", author="newbie") == NOT_TOLD_YOU


@pytest.mark.parametrize(
    "question",
    [
        "what should I cook tonight?",
        "any ideas for my weekend?",
        "how do I fix a flat tyre?",
        "can you recommend a good book for me?",
        "what do you think I should name my cat?",
    ],
)
def test_a_question_about_oneself_that_asks_for_advice_is_the_models_to_answer(question: str) -> None:
    """ "What do you like to eat for dinner?" to "what should I cook tonight?" was replaced by "I don't remember
    you telling me that.": advice is not something the bot was told."""
    assert not guard(question, [_item("alex: my dog is called Biscuit", 1, "u-alex")]).about_memory


@pytest.mark.parametrize("question", ["can you remind me what my dog is called?", "how old is my dog?"])
def test_a_question_about_oneself_that_asks_what_was_said_is_about_memory(question: str) -> None:
    assert guard(question, [_item("alex: my dog is called Biscuit", 1, "u-alex")]).about_memory
