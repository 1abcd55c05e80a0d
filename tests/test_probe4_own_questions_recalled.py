"""The asker's own earlier question is not recalled with whatever was said before it (found by the new-user probe:
`hippobot recall "what is my dog called?"` by newbie showed "alex: the party is on Saturday / newbie: what is my dog
called?" second, above the other memories). A question brings the reply someone gave it, if anyone did."""

from __future__ import annotations

from bot.app import App
from tests.fakes import ScriptedLLM
from tests.test_brain import say


async def test_the_askers_earlier_question_comes_only_with_its_answer(app: App, llm: ScriptedLLM) -> None:
    llm.reply = "Fun!"
    await say(app, "my dog is called Biscuit", author="alex")
    await say(app, "the party is on Saturday at 8pm at my place", author="alex")
    await say(app, "what is my dog called?", author="newbie")
    await app.brain.drain()
    bundle = await app.brain.context("what is my dog called?", "g1", author_id="u-newbie")
    texts = [i.text for i in bundle.items(preamble=False) if i.kind in ("episode", "message")]
    assert not any("newbie: what is my dog called?" in t for t in texts), texts
    await say(app, "what was the name of your dog again?", author="bo")
    await say(app, "Biscuit, after the colour", author="alex")
    await app.brain.drain()
    bundle = await app.brain.context("what was the name of your dog again?", "g1", author_id="u-bo")
    texts = [i.text for i in bundle.items(preamble=False) if i.kind in ("episode", "message")]
    assert any("bo: what was the name of your dog again?" in t and "Biscuit, after the colour" in t for t in texts), (
        "answered by someone, it comes with its answer"
    )
