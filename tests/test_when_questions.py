"""A question asking when something happens is answered only from a memory of that thing (a new user's try: "when
is Lena's wedding?", nobody having mentioned one, got "December 2026." from "My sister Lena is moving to Berlin next
month"; "when is the wedding?" got the day of a job interview). Real PostgreSQL, MiniLM and spaCy; the model's
reply is scripted, the check is under test."""

from __future__ import annotations

from bot.app import App
from bot.grounding import asked_phrase, asks_when, guard, stem
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, memory, tell, undated

DECLINED = ("I don't remember", "I don't know")


def test_what_a_when_question_asks_about() -> None:
    assert asks_when("when is Lena's wedding?") and asks_when("What day is the match?")
    assert asks_when("When's the party?") and not asks_when("where is the party?")
    assert asked_phrase("When did Omar buy the vehicle?", {stem("omar")}) == "buy vehicle"
    assert asked_phrase("when is Lena's wedding?", {stem("lena")}) == "wedding"


def test_when_a_particular_thing_happens_is_a_question_about_memory() -> None:
    lines = [memory("ana: I have a job interview on Thursday at the museum.")]
    assert guard("when is the wedding?", lines).about_memory, "the wedding: someone's, so memory answers"
    assert guard("when is their party?", lines).about_memory
    assert not guard("when did world war two end?", lines).about_memory, "left to the model"


async def test_an_unrelated_memory_of_the_person_does_not_say_when(app: App, llm: ScriptedLLM) -> None:
    await tell(
        app,
        llm,
        ("ana", "My sister Lena is moving to Berlin next month."),
        ("ana", "I have a job interview on Thursday at the museum."),
    )
    reply = await ask_as(app, llm, "bo", "when is Lena's wedding?", "December 2026.")
    assert reply.text.startswith(DECLINED), reply.text
    assert not reply.grounding().items
    reply = await ask_as(app, llm, "bo", "when is the wedding?", "Thursday.")
    assert reply.text.startswith(DECLINED), reply.text


async def test_a_memory_of_the_thing_in_other_words_still_says_when(app: App, llm: ScriptedLLM) -> None:
    await tell(
        app, llm, ("omar", "I got a car on Sunday, a little red hatchback."), ("omar", "My sister Lena is a nurse.")
    )
    reply = await ask_as(app, llm, "bo", "When did Omar buy the vehicle?", "Sunday.")
    assert reply.text.startswith("Sunday"), reply.text
    assert any("car" in i.text for i in reply.grounding().items)
    reply = await ask_as(app, llm, "bo", "when is Lena moving?", "Next month.")
    assert reply.text.startswith(DECLINED), "nothing said of a move"


async def test_only_the_lines_about_the_thing_say_when(app: App, llm: ScriptedLLM) -> None:
    """An episode holds a turn either side: "when is the wedding?" was answered with the day of the job interview
    held in the turn beside a memory of the wedding. The answer to a question about it still counts."""
    await tell(
        app,
        llm,
        ("bo", "Any news about the wedding?"),
        ("ana", "Yes! June 5th, at the old mill."),
        ("ana", "I also have a job interview on Thursday at the museum."),
        ("bo", "Good luck with it."),
        ("ana", "Thanks. The venue for the wedding has a lovely garden."),
    )
    reply = await ask_as(app, llm, "cy", "when is the wedding?", "Thursday.")
    assert "Thursday" not in reply.text and not any("Thursday" in i.text for i in reply.grounding().items)
    reply = await ask_as(app, llm, "cy", "when is the wedding?", "June 5th.")
    assert reply.text == "June 5th." and any("June 5th" in i.text for i in reply.grounding().items)
    reply = await ask_as(app, llm, "cy", "when is the interview?", "Thursday.")
    assert undated(reply.text) == "Thursday." and reply.text.startswith("Thursday ("), "dated as its memory dates it"


def test_a_number_in_an_answer_must_be_in_the_memory() -> None:
    """P7: "when is theo's wedding?" got "June 26th." and "June 5." from "getting married in June"."""
    from bot.grounding import ground

    said = [memory("maya: my brother Theo is getting married in June in Seville")]
    assert not ground("June 5.", "when is Theo's wedding?", said).items
    assert not ground("June 26th.", "when is Theo's wedding?", said).items
    assert ground("June.", "when is Theo's wedding?", said).items
    flight = [memory("jun: I'm flying to Tokyo on Friday at 7am")]
    assert ground("At 7 am.", "what time is jun's flight?", flight).items, "7am holds the 7 of 7 am"


def test_a_copied_day_is_dated_as_its_memory_dates_it() -> None:
    """P8: "when did ben start at Acme?" got "Monday." from "I start my new job at Acme on Monday", said on Friday
    20 November: the memory's Monday is the 23rd."""
    from datetime import UTC, datetime
    from dataclasses import replace

    from bot.grounding import dated_answer

    said = datetime(2026, 11, 20, 12, tzinfo=UTC)
    acme = replace(memory("ben: I start my new job at Acme on Monday.", 1, "u-ben"), created_at=said)
    cat = replace(memory("ana: Yesterday I adopted a grey cat called Miso.", 2), created_at=said)
    assert dated_answer("Monday.", [acme]) == "Monday (23 November 2026)."
    assert dated_answer("On Monday.", [acme, cat]) == "Monday (23 November 2026)."
    assert dated_answer("Yesterday.", [cat]) == "19 November 2026."
    assert dated_answer("Saturday (21 November 2026).", [acme]) is None, "dated already"
    assert dated_answer("Tuesday.", [acme]) is None, "no memory says Tuesday"
    # P8, P9: "The Friday before 30 October 2026." from "visiting next Friday (30 October 2026)": that Friday
    julia = replace(
        memory("ana: My sister Julia is visiting next Friday.", 3), created_at=datetime(2026, 10, 25, tzinfo=UTC)
    )
    assert dated_answer("The Friday before 30 October 2026.", [julia]) == "Friday (30 October 2026)."
    assert dated_answer("The Friday before 6 November 2026.", [julia]) is None, "no memory's Friday is that day"
    later = replace(acme, created_at=datetime(2026, 11, 27, 12, tzinfo=UTC), prompt_line="x")
    assert dated_answer("Monday.", [acme, later]) is None, "two memories, two Mondays: not one day"


def test_a_day_said_relative_to_its_memory_is_shown_without_the_relative_word() -> None:
    """P9: asked on 5 December, "is my dentist appointment still coming up?" got "Next Friday (27 November
    2026).": "next" counts from the day it was said, and reads as counting from today."""
    from bot.grounding import absolute_day

    assert absolute_day("Next Friday (27 November 2026).") == "Friday (27 November 2026)."
    assert absolute_day("on last Sunday (22 November 2026)") == "Sunday (22 November 2026)."
    assert absolute_day("Yesterday (19 November 2026).") == "19 November 2026."
    assert absolute_day("Friday (27 November 2026).") == "Friday (27 November 2026)."
    assert absolute_day("Next Friday at the dentist (27 November 2026).") is None, "more than the day: as it is"
    assert absolute_day("Next Friday.") is None


def test_a_day_gone_by_asked_of_as_if_to_come_says_how_long_ago() -> None:
    """P9, P10: "is my dentist appointment still coming up?", asked on 5 December, got "Friday (27 November
    2026)." with nothing to say it had passed."""
    from datetime import UTC, datetime

    from bot.grounding import from_now

    now = datetime(2026, 12, 5, 10, tzinfo=UTC)
    asked = "is my dentist appointment still coming up?"
    assert from_now("Friday (27 November 2026).", "when is my dentist appointment?", now) == (
        "Friday (27 November 2026), 8 days ago."
    )
    assert from_now("4 December 2026.", "when is the party?", now) == "4 December 2026, yesterday."
    assert from_now("1 March 2026.", "when is my exam?", now) == "1 March 2026, 9 months ago."
    assert from_now("27 November 2026.", "when did I go to the dentist?", now) is None, "asked in the past"
    assert from_now("6 December 2026.", asked, now) is None, "to come"
    assert from_now("Friday (27 November 2026) at 3pm.", asked, now) is None, "more than a day"
    # P11: a yes/no question is answered no, and "Two weeks (around D)." is that day
    assert from_now("Friday (27 November 2026).", asked, now) == "No, it was on Friday (27 November 2026), 8 days ago."
    assert from_now("Around 18 November 2026.", "when is the wedding?", now) == "Around 18 November 2026, 2 weeks ago."
    from bot.grounding import absolute_day

    assert absolute_day("Two weeks (around 18 November 2026).") == "Around 18 November 2026."


async def test_a_day_gone_by_keeps_its_source(app: App, llm: ScriptedLLM) -> None:
    """P11: "Friday (27 November 2026), 8 days ago." was shown without a source: "8" is in no memory."""
    from datetime import UTC, datetime

    await tell(app, llm, ("ana", "My dentist appointment is next Friday at 3 pm."))
    said = datetime(2026, 11, 20, 10, tzinfo=UTC)
    await app.db.pool.execute("UPDATE messages SET created_at = $1", said)
    await app.db.pool.execute("UPDATE episodes SET created_at = $1", said)
    llm.reply = "Next Friday."
    asked = datetime(2026, 12, 5, tzinfo=UTC)
    reply = await app.brain.ask(
        "is my dentist appointment still coming up?", "g1", author_id="u-ana", author_name="ana", now=asked
    )
    await reply.complete()
    assert reply.text == "No, it was on Friday (27 November 2026), 8 days ago.", reply.text
    assert reply.grounding().sources, "the message it came from"


def test_a_span_read_as_before_its_date_is_that_date() -> None:
    """A new user's try: "when do I start at Spotify?" after "I got an offer from Spotify and I start in two weeks"
    got "Two weeks before 12 December 2026.", the reader reading "in two weeks (around 12 December 2026)" as it
    read "next Friday (30 October 2026)" (P8)."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from bot.grounding import dated_answer

    said = memory("sam: I got an offer from Spotify and I start in two weeks", 1, "u-sam")
    said = replace(said, created_at=datetime(2026, 11, 28, tzinfo=UTC))
    assert dated_answer("Two weeks before 12 December 2026.", [said]) == "Around 12 December 2026."
    assert dated_answer("Two weeks before 19 December 2026.", [said]) is None, "no memory says that day"
