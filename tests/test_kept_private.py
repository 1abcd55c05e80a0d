"""A message that asks not to be passed on is never made a memory (P7: sam's "my passport number is X1234567,
don't tell anyone" was given to anyone who asked, with its source). Real PostgreSQL, MiniLM and spaCy."""

from __future__ import annotations

from bot.app import App
from memory.absorption import kept_private
from tests.fakes import ScriptedLLM
from tests.grounding_support import ask_as, tell, tell_in


def test_what_asks_not_to_be_passed_on() -> None:
    assert kept_private("my passport number is X1234567, don't tell anyone")
    assert kept_private("Keep this between us: I'm applying for the Berlin job.")
    assert kept_private("this is confidential, ok?")
    assert not kept_private("I told everyone about the wedding") and not kept_private("don't tell me that")


async def test_a_secret_is_kept_in_the_log_but_never_recalled(app: App, llm: ScriptedLLM) -> None:
    await tell(app, llm, ("sam", "my passport number is X1234567, don't tell anyone"), ("sam", "I play bass."))
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE content LIKE '%X1234567%'") == 1
    assert (
        await app.db.pool.fetchval(
            "SELECT count(*) FROM episodes e JOIN messages m ON m.id = e.message_id WHERE m.content LIKE '%X1234567%'"
        )
        == 0
    )
    assert await app.db.pool.fetchval("SELECT count(*) FROM kg_nodes WHERE name ILIKE '%x1234567%'") == 0
    reply = await ask_as(app, llm, "zoe", "what is sam's passport number?", "X1234567.")
    assert "X1234567" not in reply.text and not reply.grounding().items
    assert await app.db.pool.fetchval("SELECT count(*) FROM messages WHERE absorbed_at IS NULL AND NOT is_bot") == 0


async def test_a_secret_told_in_a_restricted_channel_stays_known_there(app: App, llm: ScriptedLLM) -> None:
    """P8: "Project Nightjar launches on December 3, keep it secret." said in the private #staff was then unknown
    in #staff too; the channel's audience is the one it was told to."""
    await tell_in(app, llm, "staff", "dmitri", "Project Nightjar launches on December 3, keep it secret.")
    there = await app.brain.context(
        "when does Project Nightjar launch?", "g1", channel_id="staff", visible_channel="staff", k=5
    )
    assert any("Nightjar" in i.text for i in there.items(preamble=False))
    public = await app.brain.context("when does Project Nightjar launch?", "g1", channel_id="general", k=5)
    assert not any("Nightjar" in i.text for i in public.items(preamble=False))
