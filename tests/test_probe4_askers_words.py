"""A reply copied from someone's memory says their "my" from the asker's side (tried as a new user: alex said "the
party is on Saturday at 8pm at my place"; newbie's "where is the party?" got "At my place.", which says the bot's)."""

from __future__ import annotations

import pytest

from bot.app import App
from bot.grounding import in_askers_words
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, tell


@pytest.mark.parametrize(
    ("reply", "asker", "said"),
    [
        ("At my place.", "newbie", "At alex's place."),
        ("At my place.", "alex", "At your place."),
        ("My dog, Biscuit.", "alex", "Your dog, Biscuit."),
        ("It's mine.", "bo", "It's alex's."),
        ("Myself? No.", "bo", "Myself? No."),  # only the possessives
    ],
)
def test_possessives_are_said_from_the_askers_side(reply: str, asker: str, said: str) -> None:
    assert in_askers_words(reply, "alex", asker) == said


async def test_a_reply_from_alexs_memory_says_alexs(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("alex", "the party is on Saturday at 8pm at my place"))
    reply = await ask_as(app, llm, "newbie", "where is the party?", "At my place.")
    assert reply.text == "At alex's place."
    assert not reply.replaced, "reworded, not replaced"
    assert [s.author for s in await app.brain.source_lines("g1", reply.grounding())] == ["alex"]
    reply = await ask_as(app, llm, "alex", "where is the party?", llm.reply)
    assert reply.text == "At your place."
