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
    assert "more; `hippobot mine --person alex` lists them all)" in reply.text


async def test_a_message_with_a_corrected_claim_is_not_what_the_bot_knows(app: App, llm: ScriptedLLM) -> None:
    """P7: "what do you know about me?" listed "I live in Porto, moved here in 2024" beside the move to Lisbon."""
    from tests.grounding_support import ask_as, tell

    await tell(app, llm, ("omar", "I live in Porto, moved here in 2024"), ("omar", "I have two cats."))
    await tell(app, llm, ("omar", "update: I moved from Porto to Lisbon last week."))
    reply = await ask_as(app, llm, "omar", "what do you know about me?", "unused")
    assert "Lisbon" in reply.text and "cats" in reply.text and "I live in Porto" not in reply.text, reply.text


async def test_the_consoles_user_is_the_historys_person_of_that_name(
    app: App, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """P8: `hippobot ask` as dmitri, whose facts came from an imported history, was told "You haven't told me
    anything about yourself that I remember."; P9: `ask --user ana` was declined "where do I work?" beside her
    imported "I'm now a nurse at the Westside clinic". The console's --user is the history's person of that name,
    when exactly one has it (``console_person``); two of one name are neither."""
    from bot.ask_cli import AskLine, answer
    from bot.console import console_person
    from tests.test_importer import write_jsonl

    def said(id_: str, name: str, text: str) -> dict[str, object]:
        author = {"id": f"p-{name}", "name": name}
        return {"id": id_, "channel": "general", "author": author, "timestamp": "2026-11-07T10:00:00Z", "text": text}

    history = [
        said("1", "ana", "I switched jobs: I'm now a nurse at the Westside clinic."),
        said("2", "ana", "I have a dog called Pixel, a little terrier."),
        said("3", "bo", "I work at the harbour office."),
        said("4", "cy", "I play the cello."),
        said("5", "cy", "I live in Leeds."),  # another person called cy: a second id
        said("6", "Bo", "I sail on weekends."),  # a Discord export's "Bo" beside the person whose id is p-bo
    ]
    history[4]["author"] = {"id": "p-cy-other", "name": "cy"}
    history[5]["author"] = {"id": "9001", "name": "p-bo"}
    await app.importer.run(write_jsonl(tmp_path / "h.jsonl", history), "g1")
    assert await console_person(app.conversations, "g1", "ana") == "p-ana"
    assert await console_person(app.conversations, "g1", "zoe") is None
    assert await console_person(app.conversations, "g1", "cy") is None, "two people of one name: neither"
    assert await console_person(app.conversations, "g1", "p-bo") == "p-bo", "P9: the id names its person first"

    about = await answer(app, AskLine("what do you know about me?", "g1", "ana", None, None))
    assert about["reply"].startswith("You told me: ") and "Pixel" in about["reply"], about["reply"]
    assert "harbour" not in about["reply"]
    nobody = await answer(app, AskLine("what do you know about me?", "g1", "cy", None, None))
    assert nobody["reply"] == "You haven't told me anything about yourself that I remember.", "no mix of two cys"

    llm.reply = "Westside clinic."
    work = await answer(app, AskLine("where do I work?", "g1", "ana", None, None))
    facts = [m["text"] for m in work["memory"] if m["kind"] == "fact"]
    assert any("Westside clinic" in t for t in facts) and not any("harbour" in t for t in facts), facts
    assert work["reply"] == "Westside clinic."
