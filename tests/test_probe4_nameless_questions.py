"""A short question that names no one still asks about what was said (found trying the bot as a new user: after
"the party is on Saturday at 8pm at my place", "when is the party?" was planned as an acknowledgment, recalled no
memory, and was answered "20 October 1987."). Such a question is planned with memory, and when one memory holds
every word it asks with, its reply must come from memory."""

from __future__ import annotations

import asyncpg

from bot.app import App
from bot.grounding import guard
from memory.embed import MiniLMEmbedder
from memory.layers.base import MemoryItem
from memory.sources import SourceRef
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, tell, undated
from tests.test_archetypes import router_for

PARTY = MemoryItem(
    "episode",
    0.9,
    "alex: the party is on Saturday at 8pm at my place",
    "alex: the party is on Saturday at 8pm at my place",
    (1,),
    sources=(SourceRef(1, "x1", "c1", "console", "u-alex"),),
)


async def test_a_question_is_never_planned_without_memory(pool: asyncpg.Pool, embedder: MiniLMEmbedder) -> None:
    router = router_for(pool, embedder)
    await router.refresh()
    thanks = await embedder.embed("ok cool, thanks")
    assert router.classify(thanks).vectors == 0, "an acknowledgment recalls nothing"
    for text in ("when is the party?", "what time is it on?", "ok and where?"):
        plan = router.classify(await embedder.embed(text), asks=True)
        assert plan.vectors > 0, (text, plan)


def test_a_nameless_question_whose_words_one_memory_holds_is_about_memory() -> None:
    assert guard("when is the party?", [PARTY]).about_memory
    assert not guard("what is the capital of France?", [PARTY]).about_memory, "no memory holds its words"
    # When a particular thing happens is memory's to say even when nothing holds it (the model invents a date);
    # a general question with nothing remembered of it is the model's.
    assert guard("when is the party?", []).about_memory
    assert not guard("what is the capital of France?", []).about_memory


async def test_an_invented_date_for_a_remembered_party_is_not_shown(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("alex", "the party is on Saturday at 8pm at my place"))
    reply = await ask_as(app, llm, "bo", "when is the party?", "20 October 1987.")
    assert undated(reply.text) == 'I remember alex saying: "the party is on Saturday at 8pm at my place"', (
        "the invention is not shown; what was said is, in its words"
    )
    assert reply.plan.vectors > 0 and any("party" in i.text for i in reply.memories_in_prompt())
    reply = await ask_as(app, llm, "bo", "when is the party?", "Saturday at 8pm.")
    assert reply.text == "Saturday at 8pm."
