""" "What do you know about me?" (P5 §7: "I don't remember anyone telling me that." after six facts told): the bot
tells the asker what their messages taught it, with the messages as sources, current facts only, and never a
restricted channel's outside it."""

from __future__ import annotations

from pathlib import Path

from bot.app import App
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, tell, tell_in


async def test_what_do_you_know_about_me_lists_the_askers_facts_with_sources(app: App, llm: ScriptedLLM) -> None:
    await tell(
        app,
        llm,
        ("alex", "My dog is called Biscuit, he is a beagle."),
        ("alex", "I live in Lisbon."),
        ("bea", "I have two cats, Pepper and Salt."),
        ("alex", "I moved to Porto."),
    )
    llm.prompts.clear()
    reply = await ask_as(app, llm, "alex", "what do you know about me?", "I don't remember anyone telling me that.")
    assert not llm.prompts, "written without the model"
    assert reply.text.startswith("You told me: ") and "Biscuit" in reply.text and "Porto" in reply.text
    assert "more" not in reply.text, "three messages, all shown"
    assert "Lisbon" not in reply.text, "a fact a newer one corrected is not told as current"
    assert "cats" not in reply.text and "Pepper" not in reply.text, "only the asker's"
    assert {s.author for s in await app.brain.source_lines("g1", reply.grounding())} == {"alex"}
    reply = await ask_as(app, llm, "dana", "what do you know about me?", "Nice.")
    assert reply.text == "You haven't told me anything about yourself that I remember."
    reply = await ask_as(app, llm, "alex", "what did I tell you about my dog?", "Biscuit.")
    assert reply.text == "Biscuit.", "a question about one thing is a question about memory as before"


async def test_a_restricted_channels_facts_are_told_only_there(app: App, llm: ScriptedLLM) -> None:
    await tell_in(app, llm, "staff", "alex", "I work as a locksmith.")
    public = await app.brain.ask("what do you know about me?", "g1", author_id="u-alex", author_name="alex")
    assert await public.complete() == "You haven't told me anything about yourself that I remember."
    there = await app.brain.ask(
        "what do you know about me?",
        "g1",
        author_id="u-alex",
        author_name="alex",
        channel_id="staff",
        visible_channel="staff",
    )
    assert "locksmith" in await there.complete()


async def test_more_than_fit_say_where_the_rest_is(app: App, llm: ScriptedLLM) -> None:
    await tell(
        app,
        llm,
        *[
            ("alex", line)
            for line in (
                "My dog is called Biscuit.",
                "I live in Lisbon.",
                "I work as a nurse.",
                "My sister Maria is a pilot.",
                "I play the cello.",
                "My favourite food is ramen.",
                "I drive a blue Vespa.",
            )
        ],
    )
    reply = await ask_as(app, llm, "alex", "what do you know about me?", "Nice.")
    assert "more; `hippobot mine --person <you>` lists them all)" in reply.text


async def test_a_message_with_a_corrected_claim_is_not_what_the_bot_knows(app: App, llm: ScriptedLLM) -> None:
    """P7: "what do you know about me?" listed "I live in Porto, moved here in 2024" beside the move to Lisbon."""
    from tests.grounding_support import ask_as, tell

    await tell(app, llm, ("omar", "I live in Porto, moved here in 2024"), ("omar", "I have two cats."))
    await tell(app, llm, ("omar", "update: I moved from Porto to Lisbon last week."))
    reply = await ask_as(app, llm, "omar", "what do you know about me?", "unused")
    assert "Lisbon" in reply.text and "cats" in reply.text and "I live in Porto" not in reply.text, reply.text


async def test_the_consoles_user_is_the_historys_person_of_that_name(app: App, tmp_path: Path) -> None:
    """P8: `hippobot ask` as dmitri, whose nine facts came from an imported history (author id "d-7"), was told
    "You haven't told me anything about yourself that I remember." The console's --user is that person too."""
    from tests.test_importer import write_jsonl

    row = {"channel": "general", "author": {"id": "d-7", "name": "dmitri"}, "timestamp": "2026-10-05T10:00:00Z"}
    await app.importer.run(
        write_jsonl(
            tmp_path / "h.jsonl",
            [
                {**row, "id": "1", "text": "I have a dog called Pixel, a little terrier."},
                {**row, "id": "2", "text": "I ran the city half marathon in 1:43 last weekend."},
            ],
        ),
        "g1",
    )
    reply = await app.brain.ask("what do you know about me?", "g1", author_id="console:dmitri", author_name="dmitri")
    said = await reply.complete()
    assert said.startswith("You told me: ") and "Pixel" in said and "1:43" in said, said
    other = await app.brain.ask("what do you know about me?", "g1", author_id="console:zoe", author_name="zoe")
    assert await other.complete() == "You haven't told me anything about yourself that I remember."


async def test_ask_as_the_historys_person_asks_with_their_facts(app: App, llm: ScriptedLLM, tmp_path: Path) -> None:
    """P9: `ask --user ana` in a scope whose history holds ana's "I'm now a nurse at the Westside clinic" was declined
    "where do I work?": the console's ana was not the imported ana, so her facts were not the asker's."""
    from bot.ask_cli import AskLine, answer
    from bot.console import console_person
    from tests.test_importer import write_jsonl

    row = {"channel": "general", "author": {"id": "a-1", "name": "ana"}, "timestamp": "2026-11-07T10:00:00Z"}
    other = {**row, "author": {"id": "b-2", "name": "bo"}}
    await app.importer.run(
        write_jsonl(
            tmp_path / "h.jsonl",
            [
                {**row, "id": "1", "text": "I switched jobs: I'm now a nurse at the Westside clinic."},
                {**other, "id": "2", "text": "I work at the harbour office."},
            ],
        ),
        "g1",
    )
    assert await console_person(app.conversations, "g1", "ana") == "a-1"
    assert await console_person(app.conversations, "g1", "zoe") is None
    llm.reply = "Westside clinic."
    said = await answer(app, AskLine("where do I work?", "g1", "ana", None, None))
    facts = [m["text"] for m in said["memory"] if m["kind"] == "fact"]
    assert any("Westside clinic" in t for t in facts) and not any("harbour" in t for t in facts), facts
    assert said["reply"] == "Westside clinic."
