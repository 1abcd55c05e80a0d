"""Replies that use memory (issue 28): the bot's own words are never recalled as evidence, questions are not
remembered as statements, a reply shows the sources it drew on, and `hippobot ask` answers a batch read-only."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot import ask_cli
from bot.app import App
from bot.console import Console, ConsoleIdentity
from bot.grounding import (
    NOT_TOLD,
    NOT_TOLD_YOU,
    answer_words,
    ground,
    grounded_or_not_told,
    guard,
    is_question,
    names_in,
)
from bot.prompt import SPEAKER_LINE
from memory.layers.base import MemoryItem
from memory.layers.episodes import only_questions
from memory.sources import SourceRef
from tests.conftest import make_settings
from tests.test_brain import say
from tests.fakes import ScriptedLLM


async def test_the_bots_invention_is_never_recalled_as_what_people_said(app: App, llm: ScriptedLLM) -> None:
    await say(app, "My sister Ines lives in Porto", channel="c1")
    llm.reply = "In Rotterdam, I think."  # the model invents an answer
    await say(app, "Where does my sister live?", channel="c1")
    await app.brain.drain()
    bundle = await app.brain.context("where does my sister live", "g1", channel_id="elsewhere", author_id="u-ana", k=10)
    recalled = [i for i in bundle.items(preamble=False) if i.kind != "turn"]
    assert any("Porto" in i.text for i in recalled)
    assert not any("Rotterdam" in i.text for i in recalled), [i.text for i in recalled]
    pool = app.db.pool
    bot_ids = {r["id"] for r in await pool.fetch("SELECT id FROM messages WHERE is_bot")}
    assert bot_ids and not any(s.id in bot_ids for i in recalled for s in i.sources)
    # the episode holds the person's words only; the question made none
    episodes = [r["content"] for r in await pool.fetch("SELECT content FROM episodes")]
    assert episodes == ["ana: My sister Ines lives in Porto"]


async def test_a_question_is_not_remembered_as_a_statement() -> None:
    assert only_questions("where does my sister live?")
    assert only_questions("ok? and you?")
    assert not only_questions("My sister lives in Porto. Did I tell you?")
    assert not only_questions("I moved to Leeds")


def test_a_question_that_carries_a_statement_is_remembered() -> None:
    assert not only_questions("my brother recommended Piranesi, has anyone read it?")
    assert not only_questions("did you know my sister moved to Porto?")
    assert not only_questions("I finally got the job at the bakery - can you believe it?")
    # a greeting or a word before the question tells nothing
    assert only_questions("hey Tom, where do you live?")
    assert only_questions("quick one: what's my dog called?")
    assert only_questions("what is my dog called, do you remember?")


def test_filler_a_base_model_writes_after_its_turn_is_cut() -> None:
    for text in ("Pico.\nConversation continued...", "Pico.\n\nConversation ended with the following words:"):
        m = SPEAKER_LINE.search(text)
        assert m is not None and text[: m.start()] == "Pico."


def _item(text: str, rid: int) -> MemoryItem:
    return MemoryItem("episode", 0.9, text, text, (rid,), sources=(SourceRef(rid, f"x{rid}", "c1", "console"),))


def test_a_reply_is_grounded_on_the_memory_holding_its_answer_words() -> None:
    items = [_item("bo: I finally bought a bike", 1), _item("ana: my dog is called Pico", 2)]
    g = ground("Your dog is called Pico.", "what is my dog called?", items)
    assert [i.message_ids for i in g.items] == [(2,)]
    assert [s.external_id for s in g.sources] == ["x2"]


@pytest.mark.parametrize(
    "reply", ["I don't know what your dog is called.", "I don't remember that.", "Hello!", "Hi there!"]
)
def test_a_reply_without_answer_words_from_memory_shows_no_sources(reply: str) -> None:
    items = [_item("ana: hi! my dog is called Pico", 2)]
    assert ground(reply, "what is my dog called?", items).items == ()


def test_answer_words_leave_out_the_question_and_stop_words() -> None:
    assert answer_words("Your dog is called Pico", "what is my dog called?") == {"pico"}


async def test_the_console_shows_where_a_remembered_answer_came_from(app: App, llm: ScriptedLLM) -> None:
    out, err = io.StringIO(), io.StringIO()
    me = ConsoleIdentity(user="ana", channel="console", scope="local")
    console = Console(app.brain, me, io.StringIO(), out, err, interactive=False)
    llm.reply = "Nice!"
    await console._chat("my dog is called Pico")
    await app.brain.drain()
    llm.reply = "Your dog is called Pico."
    await console._chat("what is my dog called?")
    lines = out.getvalue().splitlines()
    sources = [line for line in lines if line.strip().startswith("(from:")]
    assert len(sources) == 1 and "ana" in sources[0], out.getvalue()
    first = await app.db.pool.fetchval("SELECT id FROM messages WHERE content = 'my dog is called Pico'")
    assert f"#{first}" in sources[0]
    llm.reply = "Hello to you too."
    await console._chat("hello")
    assert out.getvalue().splitlines()[-1].startswith("hippobot: Hello"), "a reply that uses no memory adds nothing"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("When did Julia visit Lisbon?", ["Julia", "Lisbon"]),
        ("when did I go to Mexico City? I forgot", ["Mexico City"]),
        ("Would Chloe enjoy the Tour de France?", ["Chloe", "Tour de France"]),
        ("What is my dog called?", []),
        ("I met Bob. Where is he now?", ["Bob"]),
        ("What is Aoife's job?", ["Aoife"]),
    ],
)
def test_names_in_a_question_leave_out_a_sentences_first_word_and_i(text: str, names: list[str]) -> None:
    assert names_in(text) == names


def test_a_question_is_asked_with_a_question_mark_or_a_wh_word() -> None:
    assert is_question("is it raining?") and is_question("where does Julia work")
    assert not is_question("my dog is called Pico") and not is_question("do it now")


def test_the_guard_refuses_a_question_about_someone_memory_never_mentions() -> None:
    items = [_item("julia: back from Porto yesterday!", 1)]
    g = guard("When did Julia meet Tomasz?", items, people=["Julia", "Tomasz"])
    assert g.about_memory and g.missing == ("Tomasz",)
    assert g.refusal == "I don't remember anyone mentioning Tomasz."
    assert guard("When did Julia visit Porto?", items, people=["Julia"]).refusal is None, "all it names is remembered"
    # a place the memory never names is not refused by its name: "in Hungary" may be answered by Budapest
    g = guard("When did Julia visit Lisbon?", items, people=["Julia"])
    assert g.about_memory and g.refusal is None, "held back and checked against the memory instead"
    assert g.unmentioned == ("Lisbon",) and not g.dates_ground
    # a general question that names nothing the bot remembers is the model's to answer
    assert not guard("What is the capital of France?", items).about_memory
    # a question about the asker is about memory even when it names nothing
    assert guard("what is my cat called?", items) == guard("what is my cat called?", []) != guard("hi", [])
    assert guard("what is my cat called?", []).about_memory
    # the bot's own name and the asker's do not count as things to have been told about
    assert guard("Hippobot, when did Julia go?", items, ignore=("hippobot",)).missing == ()


def test_a_question_about_someone_nobody_mentioned_is_about_memory() -> None:
    """ "Where does Aoife live?" names no one the memory knows and has no "my": without knowing Aoife is a
    person it looked like a general question and the model invented where she lives (a new user's probe)."""
    items = [_item("julia: back from Porto yesterday!", 1)]
    assert not guard("Where does Aoife live?", items).about_memory, "the name alone does not say it is a person"
    g = guard("Where does Aoife live?", items, people=["Aoife"])
    assert g.about_memory and g.refusal == "I don't remember anyone mentioning Aoife."
    assert guard("What is Aoife's job?", items, people=["Aoife"]).missing == ("Aoife",)
    # a place nobody mentioned is the model's to talk about, and a known person is checked as before
    assert not guard("What is the capital of France?", items, people=[]).about_memory
    assert guard("When did Julia visit Porto?", items, people=["Julia"]).refusal is None


def test_a_month_or_a_weekday_in_a_question_is_a_time_not_something_memory_must_mention() -> None:
    items = [_item("julia: back from Porto yesterday!", 1)]  # dated in no July and on no Friday in particular
    g = guard("Where did Julia travel between April and July?", items)
    assert g.about_memory and g.missing == ()
    assert guard("What did Julia do on Friday?", items).missing == ()
    # a person beside them is still checked
    assert guard("Did Tomasz visit Porto in July?", items, people=["Tomasz"]).missing == ("Tomasz",)


async def test_a_question_about_a_person_never_mentioned_is_answered_without_the_model(
    app: App, llm: ScriptedLLM
) -> None:
    await say(app, "Julia here: back from Porto yesterday!", channel="c1")
    await app.brain.drain()
    llm.reply = "She lives in Dublin."  # what the model would invent
    asked = len(llm.prompts)
    reply = await app.brain.ask("Where does Tomasz live?", "g1", author_id="u-bo", author_name="bo")
    assert await reply.complete() == "I don't remember anyone mentioning Tomasz."
    assert len(llm.prompts) == asked, "the model was not asked"
    assert reply.grounding().items == ()


async def test_an_invented_answer_to_a_question_about_memory_is_never_shown(app: App, llm: ScriptedLLM) -> None:
    out = io.StringIO()
    me = ConsoleIdentity(user="ana", channel="console", scope="local")
    console = Console(app.brain, me, io.StringIO(), out, io.StringIO(), interactive=False)
    llm.reply = "Nice!"
    await console._chat("my dog is called Pico")
    await app.brain.drain()
    llm.reply = "Your cat is called Pete."  # nobody said so
    await console._chat("what is my cat called?")
    await app.brain.drain()
    assert "Pete" not in out.getvalue()
    assert out.getvalue().splitlines()[-1] == f"hippobot: {NOT_TOLD_YOU}", "asked about ana's own cat"
    stored = await app.db.pool.fetchval("SELECT content FROM messages WHERE is_bot ORDER BY id DESC LIMIT 1")
    assert stored == NOT_TOLD_YOU, "what is stored is what was shown"
    llm.reply = "Your dog is called Pico."  # a grounded answer is shown as the model wrote it
    await console._chat("what is my dog called?")
    assert "hippobot: Your dog is called Pico." in out.getvalue()


async def test_ask_answers_fresh_questions_read_only(app: App, llm: ScriptedLLM) -> None:
    await say(app, "my dog is called Pico", channel="console:ana", scope="local")
    await say(app, "I work at a bakery in Lisbon", channel="console:ana", scope="local")
    await app.brain.drain()
    count = await app.db.pool.fetchval("SELECT count(*) FROM messages")
    llm.reply = "Pico."
    line = ask_cli.AskLine("what is my dog called?", "local", "ana", None, None)
    result = await ask_cli.answer(app, line)
    assert result["reply"] == "Pico."
    assert any("Pico" in m["text"] for m in result["memory"])
    # the message that holds the answer, not the turn shown beside it in the same episode
    assert [s["author"] for s in result["sources"]] == ["ana"]
    told = await app.db.pool.fetchval("SELECT id FROM messages WHERE content = 'my dog is called Pico'")
    assert [s["id"] for s in result["sources"]] == [told]
    assert set(result["timings"]) >= {"recall_s", "first_token_s", "total_s", "prompt_tokens"}
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages") == count, "ask stores nothing"
    assert "hippobot: Nice" not in llm.prompts[-1], "no recent turns: a fresh question"


def test_ask_names_every_bad_line_before_loading_anything(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"text": "hi"}\n{"text": ""}\nnot json\n{"text": "x", "now": "yesterday"}\n{"text": "x", "user": 5}\n'
        '{"text": "x", "chanel": "general"}\n',
        encoding="utf-8",
    )
    settings = make_settings("postgresql://unused", tmp_path)
    with pytest.raises(ValueError) as err:
        ask_cli.read_lines(path, settings)
    message = str(err.value)
    for n in (2, 3, 4, 5, 6):
        assert f"line {n}:" in message
    assert "line 6: unknown key 'chanel' (the keys are text, scope, user, channel, now)" in message  # P13
    assert "line 1:" not in message
    assert "line 2: the message is empty" in message and "recall" not in message  # ask's words, not recall's


def test_ask_reads_every_field(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"text": "where?", "scope": "g9", "user": "bo", "channel": "gen", "now": "2026-01-02T03:04:05Z"})
        + "\n",
        encoding="utf-8",
    )
    [line] = ask_cli.read_lines(path, make_settings("postgresql://unused", tmp_path))
    assert line.now is not None
    assert (line.text, line.scope, line.user, line.channel, line.now.year) == ("where?", "g9", "bo", "gen", 2026)


@pytest.mark.parametrize("line", ["/forget me", "/whatdoyouknow", "/recal my dog", "/Quit now"])
async def test_an_unknown_console_command_is_refused_with_the_list_not_sent_as_chat(
    app: App, llm: ScriptedLLM, line: str
) -> None:
    """Issue 32.6: an unknown /word with arguments went to the model as a message."""
    out = io.StringIO()
    console = Console(
        app.brain,
        ConsoleIdentity(user="ana", channel="console", scope="local"),
        io.StringIO(),
        out,
        io.StringIO(),
        interactive=False,
    )
    await console._handle(line)
    assert f"unknown command {line.split()[0]}" in out.getvalue() and "/recall" in out.getvalue()
    assert llm.prompts == [] and await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0


@pytest.mark.parametrize(
    ("line", "usage"),
    [
        ("/adapter nonsense", "/adapter rollback stop using"),
        ("/dream now", "/dream            run a dream cycle"),
        ("/quit now", "/quit             leave"),
        ("/persona show", "/persona          the bot's persona"),
    ],
)
async def test_a_known_console_command_with_wrong_words_gets_its_usage(
    app: App, llm: ScriptedLLM, line: str, usage: str
) -> None:
    # "/adapter nonsense" said "unknown command /adapter; the commands are ..., /adapter, ...".
    out = io.StringIO()
    console = Console(
        app.brain,
        ConsoleIdentity(user="ana", channel="console", scope="local"),
        io.StringIO(),
        out,
        io.StringIO(),
        interactive=False,
    )
    await console._handle(line)
    said = out.getvalue()
    assert "unknown command" not in said and usage in said and f"does not take {line.split()[1]!r}" in said
    assert llm.prompts == [] and await app.db.pool.fetchval("SELECT count(*) FROM messages") == 0


@pytest.mark.parametrize("line", ["/usr/bin is where it lives", "// just a comment", "/ shrug"])
async def test_a_message_that_starts_with_a_slash_is_still_a_message(app: App, llm: ScriptedLLM, line: str) -> None:
    out = io.StringIO()
    console = Console(
        app.brain,
        ConsoleIdentity(user="ana", channel="console", scope="local"),
        io.StringIO(),
        out,
        io.StringIO(),
        interactive=False,
    )
    await console._handle(line)
    assert "unknown command" not in out.getvalue() and len(llm.prompts) == 1


async def test_the_message_replied_to_is_in_the_context_however_old(app: App, llm: ScriptedLLM) -> None:
    from dataclasses import replace as with_fields

    from tests.test_brain import turn

    llm.reply = "The quokka exhibit opens at nine."
    await say(app, "tell me something about the zoo", channel="c1")
    await app.brain.drain()
    answer = await app.db.pool.fetchrow("SELECT external_id FROM messages WHERE is_bot ORDER BY id DESC LIMIT 1")
    llm.reply = "Sure."
    for i in range(14):  # more than any plan's recent turns
        await say(app, f"unrelated chatter number {i} about the weather", channel="c1")
    await app.brain.drain()
    reply = await app.brain.respond(
        with_fields(turn("what do you mean by that?", channel="c1"), reply_to=answer["external_id"])
    )
    await reply.complete()
    assert "The quokka exhibit opens at nine." in llm.prompts[-1]
    reply = await app.brain.respond(turn("what do you mean by that?", channel="c1"))
    await reply.complete()
    assert "quokka exhibit opens" not in llm.prompts[-1].split("Conversation:")[-1], "only when replied to"


async def test_a_stopped_reply_is_stored_as_far_as_it_was_shown(app: App, llm: ScriptedLLM) -> None:
    from tests.test_brain import turn

    llm.reply, llm.delay = "Once upon a time there was a hippo", 0.05
    reply = await app.brain.respond(turn("tell me a story", channel="c9"))
    shown = ""
    async for delta in reply:
        shown += delta
        if len(shown.split()) >= 3:
            break
    reply.cancel()  # /stop: the engine fills its own text only later
    await app.brain.drain()
    stored = await app.db.pool.fetchval("SELECT content FROM messages WHERE is_bot ORDER BY id DESC LIMIT 1")
    assert stored == shown.strip() and stored.startswith("Once upon"), stored


async def test_a_question_about_memory_in_a_chat_is_answered_from_memory_not_from_the_bots_earlier_replies(
    app: App, llm: ScriptedLLM
) -> None:
    """In a chat the recent turns hold the bot's own earlier replies ("I don't remember anyone telling me
    that."), which the model repeated instead of reading its memory, and hide the memories that repeat them.
    A question about memory is answered as a fresh question is: its memories, no recent turns."""
    llm.reply = "Nice!"
    await say(app, "my dog is called Pico", channel="c1")
    await app.brain.drain()
    llm.reply = "I don't remember anyone telling me that."
    await say(app, "what is my cat called?", channel="c1")
    await app.brain.drain()
    llm.reply = "Pico."
    answer = await say(app, "what is my dog called?", channel="c1")
    prompt = llm.prompts[-1]
    assert answer == "Pico."
    assert "my dog is called Pico" in prompt.split("Conversation:")[0], "the statement is shown as a memory"
    assert "I don't remember" not in prompt and "Nice!" not in prompt, "the bot's earlier replies are not"
    llm.reply = "Sure thing."
    await say(app, "tell me a joke about dogs", channel="c1")  # not a question about memory: the chat as it is
    assert "Nice!" in llm.prompts[-1].split("Conversation:")[-1]


async def test_a_question_put_to_the_bot_is_never_recalled_as_a_memory(app: App, llm: ScriptedLLM) -> None:
    """A question states nothing, and the bot's reply to it is never recalled: shown as a memory alone, it was
    answered in kind ("What breed is Kofi's rabbit?", then "What breed is Oscar's rabbit?" -> "Kofi's.").
    A question answered by the next person's turn is still found with its answer."""
    await say(app, "Oscar adopted a rabbit called Pepper last week", channel="c1")
    llm.reply = "I don't know, nobody has told me that."
    await say(app, "What breed is Kofi's rabbit?", channel="c2")
    await say(app, "where did Ben go on holiday?", channel="c3", author="bo")
    await say(app, "Lisbon, he loved the tram rides", channel="c3", author="cy")
    await app.brain.drain()
    bundle = await app.brain.context(
        "what breed is Oscar's rabbit?", "g1", channel_id="elsewhere", author_id="u-ana", k=10
    )
    recalled = [i.text for i in bundle.items(preamble=False) if i.kind != "turn"]
    assert any("Pepper" in t for t in recalled), recalled
    assert not any("Kofi" in t for t in recalled), recalled
    bundle = await app.brain.context(
        "where did Ben go on holiday, and what did he love?", "g1", channel_id="elsewhere", author_id="u-ana", k=10
    )
    assert any("tram rides" in i.text for i in bundle.items(preamble=False)), "the answer is still found"


async def test_the_abstain_bias_is_applied_only_to_a_reply_to_a_question_about_memory(
    app: App, llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = {"don": (7, 8), "Don": (8,)}  # an engine's " don" and " Don" (a name, never biased)
    monkeypatch.setattr(llm, "word_token_ids", lambda words, exclude=(): {w: ids[w] for w in words if w in ids})
    app.brain.abstain_bias, app.brain.chat_decline_bias = -2.0, 0.0
    await (await app.brain.ask("what is my dog called?", "g1", author_id="u-bo", author_name="bo")).complete()
    assert llm.boosts[-1] == {7: -2.0}
    await (await app.brain.ask("tell me a joke", "g1", author_id="u-bo", author_name="bo")).complete()
    assert 7 not in llm.boosts[-1]
    app.brain.abstain_bias = 0.0
    await (await app.brain.ask("what is my cat called?", "g1", author_id="u-bo", author_name="bo")).complete()
    assert 7 not in llm.boosts[-1]
    # the chat bias (shipped: -6) lands on anything else, never on a question about memory (P7: "what should I
    # cook tonight?" declined as if asked what someone said)
    app.brain.chat_decline_bias = -6.0
    await (await app.brain.ask("what should I cook tonight?", "g1", author_id="u-bo", author_name="bo")).complete()
    assert llm.boosts[-1] == {7: -6.0}
    await (await app.brain.ask("what is my dog called?", "g1", author_id="u-bo", author_name="bo")).complete()
    assert 7 not in llm.boosts[-1]
    assert app.settings.reader_chat_decline_bias == -6.0


def test_a_date_alone_does_not_ground_a_reply_about_something_no_memory_mentions() -> None:
    """The reader answered "When did Julia visit Lisbon?" (only Porto remembered) with the date of an unrelated
    memory, and that date grounded it. When the question names something no memory mentions, only words do."""
    from datetime import UTC, datetime

    dated = MemoryItem(
        "episode",
        0.9,
        "julia: back from Porto!",
        "julia: back from Porto!",
        (1,),
        created_at=datetime(2025, 12, 12, tzinfo=UTC),
        sources=(SourceRef(1, "x1", "c1", "console"),),
    )
    question = "When did Julia visit Lisbon?"
    assert grounded_or_not_told("12 December 2025.", question, [dated]) == "12 December 2025."
    assert grounded_or_not_told("12 December 2025.", question, [dated], dates=False) == NOT_TOLD
    budapest = _item("kofi: Budapest was amazing, the baths!", 2)
    assert grounded_or_not_told("Budapest.", "Where did Kofi go in Hungary?", [budapest], dates=False) == "Budapest."


def test_a_person_asked_about_in_a_lower_case_question_is_found() -> None:
    """Typed without a capital, "where does Aoife live?" made the tagger call Aoife a nationality, so the guard
    did not know a person was asked about and left the question to the model."""
    from memory.extract import TripleExtractor

    extractor = TripleExtractor()
    assert extractor.people("where does Aoife live?") == ["Aoife"]
    assert extractor.people("Where does Aoife live?") == ["Aoife"]
    assert extractor.people("where do you live?") == []


def test_a_question_typed_in_capitals_names_no_one_by_its_capitals() -> None:
    # the probe: "WHAT DOES OMAR DO FOR FUN?" -> "I don't remember anyone mentioning DOES OMAR DO FOR FUN."
    assert names_in("WHAT DOES OMAR DO FOR FUN?") == []
    assert guard("WHAT DOES OMAR DO FOR FUN?", [], people=[]).refusal is None
    assert names_in("What does Omar do for fun?") == ["Omar"]  # written as a sentence, the name is found


async def test_a_reply_to_news_that_only_judges_draws_on_no_memory(app: App, llm: ScriptedLLM) -> None:
    """P12: "My brother Tom is getting married on the 12th of June." -> "That would be so nice to hear!" showed a
    sources line pointing at "hi! I'm Sam, nice to meet you": "nice" only judges. Asked, a judging answer still
    draws on the memory that holds it."""
    from tests.grounding_support import ask_as, tell

    await tell(app, llm, ("sam", "hi! I'm Sam, nice to meet you"), ("sam", "The concert last night was great."))
    reply = await ask_as(
        app, llm, "sam", "My brother Tom is getting married in June.", "That would be so nice to hear!"
    )
    assert not reply.grounding().sources, reply.grounding()
    reply = await ask_as(app, llm, "sam", "how was the concert?", "Great.")
    assert reply.grounding().sources
