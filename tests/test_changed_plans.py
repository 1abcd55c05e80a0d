"""A plan changed or a decision reversed since it was said: a reply that quotes the old words shows the newer ones
(P11, a new user's friends: a picnic moved, a job offer refused)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.app import App
from bot.grounding import changed_since
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, memory, tell

PLAN = "mia: We're doing a picnic at Victoria Park on Saturday, bring snacks!"
MOVED = "mia: Update: the picnic moved to Sunday because of rain, and it's at Hyde Park now."


def test_a_newer_sentence_that_says_the_quoted_thing_changed_is_the_answer() -> None:
    plan = replace(memory(PLAN, 1, "u-mia"), created_at=datetime(2026, 11, 2, tzinfo=UTC))
    moved = replace(memory(MOVED, 2, "u-mia"), created_at=datetime(2026, 11, 4, tzinfo=UTC))
    old = ('I remember mia saying: "We\'re doing a picnic at Victoria Park on Saturday, bring snacks!"', plan)
    shown, item = changed_since("is the picnic still at Victoria Park?", old, [plan, moved], asker="aisha") or (
        "",
        None,
    )
    assert item is moved and shown.startswith('I remember mia saying: "Update: the picnic moved to Sunday'), shown
    # an older change is no news, and a newer line about something else changes nothing
    assert changed_since("is the picnic still at Victoria Park?", ("", moved), [plan, moved], asker="aisha") is None
    other = replace(memory("mia: My dentist moved to Leeds.", 3, "u-mia"), created_at=datetime(2026, 11, 5, tzinfo=UTC))
    assert changed_since("is the picnic still at Victoria Park?", old, [plan, other], asker="aisha") is None


async def test_is_it_still_on_shows_the_move_not_the_plan(app: App, llm: ScriptedLLM) -> None:
    """P11: "is the picnic still at Victoria Park?" was answered with the plan's own words, which read as yes."""
    await tell(app, llm, ("mia", PLAN.removeprefix("mia: ")), ("mia", MOVED.removeprefix("mia: ")))
    reply = await ask_as(app, llm, "aisha", "is the picnic still at Victoria Park?", "I don't know.")
    assert "moved to Sunday" in reply.text and "Hyde Park" in reply.text, reply.text
    assert [i.text for i in reply.grounding().items] and "moved" in reply.grounding().items[0].text


async def test_a_decline_beside_a_refusal_shows_the_refusal(app: App, llm: ScriptedLLM) -> None:
    """P11: with "I said no to Google" in memory, "did dev take the Google job?" and "when does dev start at
    Google?" were declined: what the memory says of Google is the answer."""
    await tell(app, llm, ("dev", "Changed my mind: I said no to Google, I'm staying at my startup."))
    for question in ("did dev take the Google job?", "when does dev start at Google?"):
        reply = await ask_as(app, llm, "aisha", question, "I don't remember.")
        assert "I said no to Google" in reply.text, (question, reply.text)
        assert reply.grounding().sources, question
    # what it asks about beyond what was refused is still not known
    reply = await ask_as(app, llm, "aisha", "what does dev's startup make?", "I don't remember.")
    assert "Google" not in reply.text, reply.text


async def test_is_it_coming_up_shows_what_was_said_of_it(app: App, llm: ScriptedLLM) -> None:
    """P11: "is my sister's wedding coming up?" was refused beside "My sister's wedding is in two weeks": "coming
    up" asks whether it is ahead, which the day said of it answers; no memory says "coming"."""
    await tell(app, llm, ("aisha", "My sister's wedding is in two weeks, I'm so nervous."))
    reply = await ask_as(app, llm, "aisha", "is my sister's wedding coming up?", "I don't remember.")
    assert reply.text.startswith("You told me: \"My sister's wedding is in two weeks"), reply.text
    assert reply.grounding().sources
    # a thing nobody mentioned is still not known, however it is asked
    reply = await ask_as(app, llm, "aisha", "is my brother's birthday coming up?", "I don't remember.")
    assert "wedding" not in reply.text, reply.text


async def test_an_answer_its_memory_calls_off_shows_the_memory(app: App, llm: ScriptedLLM) -> None:
    """P11: "when is the dinner?" got "Friday (27 November 2026)." from jonas's "Dinner on Friday is cancelled,
    let's do Saturday instead.": the day called off is shown as the message, which holds the day it moved to."""
    from bot.grounding import called_off

    said = replace(
        memory("jonas: Dinner on Friday is cancelled, let's do Saturday instead.", 5, "u-jonas"),
        created_at=datetime(2026, 11, 21, 9, tzinfo=UTC),
    )
    assert {"dinner", "friday", "27", "november", "2026"} <= called_off(said)
    assert "saturday" not in called_off(said) and not called_off(memory("jonas: Dinner is on Friday.", 6))
    await tell(app, llm, ("jonas", "Dinner on Friday is cancelled, let's do Saturday instead."))
    reply = await ask_as(app, llm, "aisha", "when is dinner?", "Friday.")
    assert reply.text.startswith('I remember jonas saying: "Dinner on Friday'), reply.text
    assert "Saturday (" in reply.text and reply.grounding().sources, reply.text
    # the day it moved to stands
    reply = await ask_as(app, llm, "aisha", "when is dinner?", "Saturday.")
    assert reply.text.startswith("Saturday ("), reply.text


async def test_a_kind_asked_for_is_held_by_a_thing_of_that_kind(app: App, llm: ScriptedLLM) -> None:
    """P11: "what pets does dev have?" and dev's own "what pets do I have?" were refused beside "I adopted a rabbit
    called Turnip and a turtle called Shelly." (5 of 9 tries for pets were refused): no word of it says "pet"."""
    from bot.kinds import word_kinds

    kinds = await word_kinds(app.embedder, ["rabbit", "turtle", "guitar", "carpet", "sister"])
    assert kinds.get("rabbit") == kinds.get("turtle") == "animal" and kinds.get("guitar") == "instrument", kinds
    assert "carpet" not in kinds and "sister" not in kinds, kinds
    await tell(app, llm, ("dev", "I adopted a rabbit called Turnip and a turtle called Shelly."))
    for asker, question in (("mia", "what pets does dev have?"), ("dev", "what pets do I have?")):
        reply = await ask_as(app, llm, asker, question, "I don't know.")
        assert "a rabbit called Turnip and a turtle called Shelly" in reply.text, (question, reply.text)
        assert reply.grounding().sources, question
    # another kind, or another person's pets, is still not known
    for question in ("what instrument does dev play?", "what pets does mia have?"):
        reply = await ask_as(app, llm, "jonas", question, "I don't know.")
        assert "Turnip" not in reply.text, (question, reply.text)


async def test_an_answer_from_a_plan_said_to_have_changed_since_shows_the_change(app: App, llm: ScriptedLLM) -> None:
    """P12: "when is ken's gig?" got "Thursday (12 November 2026), 12 days ago." 6 times of 6, sourced to both the
    plan and "Bad news: the Blue Lantern gig is pushed to Friday the 20th.", which the answer's words are not in."""
    await tell(
        app,
        llm,
        ("ken", "Our gig at the Blue Lantern is on Thursday, come along!"),
        ("ken", "Bad news: the Blue Lantern gig is pushed to Friday."),
    )
    reply = await ask_as(app, llm, "bea", "when is ken's gig?", "Thursday.")
    assert reply.text.startswith('I remember ken saying: "Bad news: the Blue Lantern gig is pushed to Friday'), (
        reply.text
    )
    assert [i.text for i in reply.grounding().items] == ["ken: Bad news: the Blue Lantern gig is pushed to Friday."]
    # the day it moved to stands
    reply = await ask_as(app, llm, "bea", "when is ken's gig?", "Friday.")
    assert reply.text.startswith("Friday ("), reply.text


def test_now_and_off_say_a_plan_changed() -> None:
    """P12: "The Blue Lantern gig is now on Friday the 20th." said nothing changed to the rule ("now" is a stop word),
    nor did "The Ben Lomond hike is off, the forecast says storms."."""
    gig = replace(
        memory("ken: Our gig is on Thursday the 12th.", 1, "u-ken"), created_at=datetime(2026, 11, 10, tzinfo=UTC)
    )
    now = replace(
        memory("ken: The gig is now on Friday the 20th.", 2, "u-ken"), created_at=datetime(2026, 11, 12, tzinfo=UTC)
    )
    hike = replace(
        memory("olu: Hike up Ben Lomond this Saturday?", 3, "u-olu"), created_at=datetime(2026, 11, 9, tzinfo=UTC)
    )
    off = replace(memory("olu: The Ben Lomond hike is off.", 4, "u-olu"), created_at=datetime(2026, 11, 11, tzinfo=UTC))
    assert (changed_since("when is the gig?", (gig.text, gig), [gig, now], asker="bea") or ("", None))[1] is now
    assert (changed_since("when is the hike?", (hike.text, hike), [hike, off], asker="bea") or ("", None))[1] is off


def test_a_day_of_the_month_copied_is_dated() -> None:
    """ "Thursday." from "on Thursday the 12th (12 November 2026)" is that day."""
    from bot.grounding import dated_answer

    gig = replace(
        memory("ken: Our gig is on Thursday the 12th.", 1, "u-ken"), created_at=datetime(2026, 11, 10, tzinfo=UTC)
    )
    assert dated_answer("Thursday.", [gig]) == "Thursday (12 November 2026)."


async def test_a_yes_no_question_about_a_plan_called_off_shows_the_call(app: App, llm: ScriptedLLM) -> None:
    """P12: "is the hike still happening?" got "Yes, it is." and "are we taking the blue tent?" "Yes, we are.",
    unsourced, beside "The Ben Lomond hike is off" and "Scratch that about the tent, we're taking the green one"."""
    await tell(
        app,
        llm,
        ("olu", "Hike up Ben Lomond this Saturday? Meeting at the car park at 8."),
        ("marta", "We're going with the blue tent for the camping trip."),
        ("olu", "The Ben Lomond hike is off, the forecast says storms."),
        ("marta", "Scratch that about the tent, we're taking the green one, the blue one leaks."),
        ("ken", "Bad news: the Blue Lantern gig is pushed to Friday."),
    )
    reply = await ask_as(app, llm, "ken", "is the hike still happening?", "Yes, it is.")
    assert reply.text == 'I remember olu saying: "The Ben Lomond hike is off, the forecast says storms."', reply.text
    reply = await ask_as(app, llm, "olu", "are we taking the blue tent?", "Yes, we are.")
    assert "we're taking the green one" in reply.text and reply.grounding().sources, reply.text
    # a question about something nothing changed keeps its answer
    reply = await ask_as(app, llm, "ken", "is the car park the meeting point?", "Yes.")
    assert "off" not in reply.text and "green" not in reply.text, reply.text


async def test_a_day_read_from_a_plan_since_called_off_shows_the_call(app: App, llm: ScriptedLLM) -> None:
    """P12: "when is the hike now?" got the Saturday of "Hike up Ben Lomond this Saturday?" (dated, "14 November
    2026, 10 days ago."), which no word of the plan holds until its "this Saturday" is read as that day, beside
    "The Ben Lomond hike is off"."""
    await tell(
        app,
        llm,
        ("olu", "Hike up Ben Lomond this Saturday? Meeting at the car park at 8."),
        ("olu", "The Ben Lomond hike is off, the forecast says storms."),
    )
    plan = (await ask_as(app, llm, "marta", "when is the hike?", "This Saturday.")).evidence()
    day = next(i for i in plan if "this Saturday" in i.text)
    from memory.timeparse import dated as dated_text

    said_day = dated_text(day.text, day.created_at).split("(")[1].split(")")[0]  # the Saturday it names
    reply = await ask_as(app, llm, "marta", "when is the hike now?", f"{said_day}.")
    assert reply.text == 'I remember olu saying: "The Ben Lomond hike is off, the forecast says storms."', reply.text


async def test_p13_plans_called_off_and_moved(app: App, llm: ScriptedLLM) -> None:
    """P13: "is five-a-side still on this week?" got "It's not cancelled yet." sourced to "Five-a-side is cancelled
    this week"; "is book club on Wednesday?" was answered with that five-a-side message; "when is book club?" got the
    Wednesday it moved from, beside "Book club moved to Tuesday, my landlord is fixing the boiler on Wednesday"."""
    await tell(
        app,
        llm,
        ("nadia", "Book club is on Wednesday at my flat, we're reading Piranesi."),
        ("nadia", "Book club moved to Tuesday, my landlord is fixing the boiler on Wednesday."),
        ("felix", "Five-a-side is at 7 on Thursday."),
        ("felix", "Five-a-side is cancelled this week, the pitch is flooded."),
    )
    reply = await ask_as(app, llm, "tomas", "is five-a-side still on this week?", "It's not cancelled yet.")
    assert reply.text == 'I remember felix saying: "Five-a-side is cancelled this week, the pitch is flooded."', (
        reply.text
    )
    reply = await ask_as(app, llm, "tomas", "is book club on Wednesday?", "I don't know.")
    assert "Five-a-side" not in reply.text, reply.text
    reply = await ask_as(app, llm, "tomas", "when is book club?", "Wednesday.")
    assert reply.text.startswith('I remember nadia saying: "Book club moved to Tuesday'), reply.text
    # what has not moved keeps its answer
    reply = await ask_as(app, llm, "tomas", "when is five-a-side?", "Thursday.")
    assert "Book club" not in reply.text, reply.text


async def test_a_facts_stance_label_is_no_part_of_a_reply(app: App, llm: ScriptedLLM) -> None:
    """P13: "Restaurant (negative)." copied the label a fact's line carries in the prompt."""
    await tell(app, llm, ("priya", "For the secret santa we picked Luca's restaurant for the dinner."))
    reply = await ask_as(app, llm, "nadia", "where is the secret santa dinner?", "Luca's restaurant (negative).")
    assert "negative" not in reply.text and "Luca's restaurant" in reply.text, reply.text


async def test_a_change_of_something_else_or_a_question_about_then_keeps_the_answer(app: App, llm: ScriptedLLM) -> None:
    """The dev split, after the P12 changes: "When is Omar's exam for a licence?" -> "18th." became a quote of his
    "update: another twelve hour shift" (a name alone tied them), and "which novel was the book club reading in
    March?" a quote of the newer "I'm reading Pachinko for book club now"."""
    await tell(
        app,
        llm,
        ("omar", "My licence exam is on the 18th."),
        ("omar", "update: another twelve hour shift at the clinic."),
        ("priya", "Our book club is reading Tomorrow, and Tomorrow, and Tomorrow."),
        ("priya", "I'm reading Pachinko for book club now, it's beautiful."),
    )
    reply = await ask_as(app, llm, "zed", "when is omar's licence exam?", "18th.")
    assert "shift" not in reply.text, reply.text
    reply = await ask_as(
        app, llm, "zed", "which novel was priya's book club reading in March?", "Tomorrow, and Tomorrow."
    )
    assert "Pachinko" not in reply.text, reply.text
    reply = await ask_as(app, llm, "zed", "which novel is priya's book club reading?", "Tomorrow, and Tomorrow.")
    assert "Pachinko" in reply.text, reply.text


async def test_a_change_of_day_does_not_answer_where_nor_a_change_of_place_when(app: App, llm: ScriptedLLM) -> None:
    """P13: "where is book club?" was shown "Book club moved to Tuesday the 8th ..." (no place), and "when is the
    secret santa dinner?" "... scratch that: the secret santa dinner will be at Casa Verde." (no day)."""
    from bot.grounding import change_answers

    moved = "Book club moved to Tuesday the 8th, my landlord is fixing the boiler on Wednesday."
    assert change_answers("when is book club?", moved, {"book", "club"})
    assert not change_answers("where is book club?", moved, {"book", "club"})
    place = "Luca's is closed for renovations, so scratch that: the secret santa dinner will be at Casa Verde."
    assert change_answers("where is the secret santa dinner?", place, {"secret", "santa", "dinner"})
    assert not change_answers("when is the secret santa dinner?", place, {"secret", "santa", "dinner"})
    assert change_answers("when is the hike?", "The Ben Lomond hike is off, the forecast says storms.", {"hike"})
    await tell(
        app,
        llm,
        ("nadia", "Book club is on Wednesday at my flat, we're reading Piranesi."),
        ("nadia", "Book club moved to Tuesday, my landlord is fixing the boiler on Wednesday."),
    )
    reply = await ask_as(app, llm, "tomas", "where is book club?", "At nadia's flat.")
    assert "moved" not in reply.text and "flat" in reply.text, reply.text


def test_a_change_said_since_needs_a_word_of_the_question_in_the_old_words() -> None:
    """The dev split: "What was the expected arrival date for Declan and Ruth's child?" -> "9 June 2025." (right)
    became 'I remember Declan saying: "Much better now."': no word of the question was in the old message, and no
    word of it tied the two."""
    due = replace(
        memory("Declan: Ruth is pregnant and the baby is due on the 9th of June.", 1, "u-declan"),
        created_at=datetime(2025, 1, 11, 15, 27, tzinfo=UTC),
    )
    better = replace(
        memory("Declan: Much better now.", 2, "u-declan"), created_at=datetime(2025, 1, 11, 15, 31, tzinfo=UTC)
    )
    question = "What was the expected arrival date for Declan and Ruth's child?"
    assert changed_since(question, (due.text, due), [due, better], asker="zed", skip={"declan", "ruth"}) is None


def test_a_streamed_reply_loses_a_stance_label_however_it_is_cut() -> None:
    """A reply streamed as the model writes it (no question about memory: P13's "where does priya work?", asked in
    lower case, was one) showed "Restaurant (negative)."."""
    from bot.brain import _LabelFilter

    def streamed(*parts: str) -> str:
        labels = _LabelFilter()
        return "".join(labels.feed(p) for p in parts) + labels.flush()

    assert streamed("Restaurant", " (", "negative", ").") == "Restaurant."
    assert streamed("Nice (positive)!") == "Nice!"
    assert streamed("I like it (a lot", ") really") == "I like it (a lot) really"
    assert streamed("it ends (neg") == "it ends (neg"


async def test_a_chat_reply_shows_no_stance_label(app: App, llm: ScriptedLLM) -> None:
    reply = await ask_as(app, llm, "nadia", "lovely weather today", "Lovely (positive)! Enjoy it.")
    assert reply.text == "Lovely! Enjoy it.", reply.text
