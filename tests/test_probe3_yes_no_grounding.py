"""A yes/no answer that asserts what nobody said is an ungrounded claim (found by the new-user probe: with nothing
in memory, "is ben on probation?" got "Yes, he's been there for 2 years."). A yes/no question asks whether
something holds; an answer beyond a bare yes or no asserts more about what it names, and when no memory and no
recent turn mentions that, the assertion can only be invented."""

from __future__ import annotations

import pytest

from bot.app import App
from bot.grounding import NOT_MENTIONED, NOT_TOLD, asks_whether, guard
from memory.layers.base import MemoryItem
from memory.sources import SourceRef
from tests.fakes import ScriptedLLM
from tests.test_brain import say


# What the bot says to "is ben on probation?" with ben never mentioned: the parse takes ben for a person, so the
# bot says nobody mentioned him without asking the model; where it does not, the model's yes is replaced.
HONEST = {NOT_TOLD, NOT_MENTIONED.format(names="ben")}


def _item(text: str, rid: int) -> MemoryItem:
    return MemoryItem("episode", 0.9, text, text, (rid,), sources=(SourceRef(rid, f"x{rid}", "c1", "console"),))


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("is ben on probation?", "ben"),
        ("Did Julia visit Lisbon?", "julia"),
        ("hasn't ana moved yet?", "ana"),
        ("can penguins fly?", "penguins"),
    ],
)
def test_a_question_opening_with_an_auxiliary_verb_asks_whether_of_its_subject(question: str, subject: str) -> None:
    assert asks_whether(question) == subject


@pytest.mark.parametrize(
    "text",
    [
        "where does ben work?",
        "ben is on probation",
        "is ben on probation",
        "do you like tea?",
        "are you awake?",
        "does this work in a thread?",
        "is the sun a star?",
        "is it raining?",
    ],
)
def test_a_statement_or_a_question_naming_nobody_or_the_bot_itself_asks_of_no_one(text: str) -> None:
    """A wh-question, a statement, or a subject that is a pronoun or a determiner: about the here and now, a
    kind of thing, or the bot itself, not someone or something to have been told about."""
    assert asks_whether(text) is None


def test_a_yes_no_question_about_someone_no_memory_mentions_is_held_to_its_memory() -> None:
    g = guard("is ben on probation?", [], people=[])
    assert g.about_memory and g.refusal is None and g.whether, "checked once written, not refused beforehand"
    assert not g.dates_ground, "a memory's date says nothing of what nobody mentioned"


def test_a_yes_no_question_about_someone_a_memory_mentions_is_checked_against_what_it_says() -> None:
    """Not the ``whether`` rule (ben is mentioned): a "yes" must find "probation" with ben in one memory
    (tests/test_probe4_yes_no_claims.py)."""
    items = [_item("ana: ben started at the bakery last week", 1)]
    g = guard("is ben on probation?", items)
    assert g.about_memory and not g.whether and g.claim is not None and not g.claim.held_in(items)


async def test_an_invented_yes_to_a_yes_no_question_about_someone_never_mentioned_is_not_shown(
    app: App, llm: ScriptedLLM
) -> None:
    llm.reply = "Yes, he's been there for 2 years."
    reply = await app.brain.ask("is ben on probation?", "g1", author_id="u-bo", author_name="bo")
    assert await reply.complete() in HONEST


async def test_an_invented_answer_in_a_chat_is_not_shown_either(app: App, llm: ScriptedLLM) -> None:
    llm.reply = "Yes, he's been there for 2 years."
    assert await say(app, "is ben on probation?") in HONEST


@pytest.mark.parametrize("invented", ["Yes.", "No.", "Nope, never."])
async def test_a_bare_yes_or_no_about_someone_never_mentioned_answers_it_all_the_same_and_is_not_shown(
    app: App, llm: ScriptedLLM, invented: str
) -> None:
    llm.reply = invented  # "is ben on probation?" "Yes." says ben is on probation: nobody said so
    reply = await app.brain.ask("is ben on probation?", "g1", author_id="u-bo", author_name="bo")
    assert await reply.complete() in HONEST


@pytest.mark.parametrize("answer", ["Yes.", "Yes, for three months at the warehouse."])
async def test_a_yes_no_answer_about_someone_a_recent_turn_mentions_is_shown(
    app: App, llm: ScriptedLLM, answer: str
) -> None:
    llm.reply = "Nice."
    await say(app, "ben started at the warehouse on probation for three months")
    await app.brain.drain()
    llm.reply = answer  # bare, or drawn from what was said: either is the model's to give
    assert await say(app, "is ben still on probation?") == answer


async def test_a_question_to_the_bot_about_itself_is_the_models_to_answer(app: App, llm: ScriptedLLM) -> None:
    llm.reply = "Yes, green tea most of all."
    assert await say(app, "do you like tea?") == "Yes, green tea most of all."


async def test_a_question_about_the_here_and_now_is_the_models_to_answer(app: App, llm: ScriptedLLM) -> None:
    llm.reply = "Yes, it works in threads too."
    assert await say(app, "does this work in a thread?") == "Yes, it works in threads too."
