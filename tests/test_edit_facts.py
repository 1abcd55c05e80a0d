"""Edits reach the knowledge graph through the Brain (issue 8, opening list: "an edit leaves the old facts in the
graph, and an edit that lands before the turn's queued write is overwritten by it").

tests/test_semantic.py calls SemanticMemory.retract directly, so it does not fail when the facts layer ignores an
edit: these go through Brain.edit, as a transport does. (An edit that lands while the turn's write is queued is
tests/test_layers.py::test_an_edit_before_the_queued_write_wins, which checks the graph too.)
"""

from __future__ import annotations

from bot.app import App
from bot.brain import IncomingTurn
from tests.fakes import ScriptedLLM


def turn(text: str, *, scope: str = "g1", author: str = "ana", channel: str = "c1") -> IncomingTurn:
    return IncomingTurn(
        scope=scope, source="console", channel_id=channel, author_id=f"u-{author}", author_name=author, text=text
    )


async def cat_names(app: App) -> set[str]:
    """The names the graph has for ana's cat (edges 'cat named X'), and whether a node 'miso' is left."""
    rows = await app.db.pool.fetch(
        """SELECT t.name FROM kg_edges e JOIN kg_nodes s ON s.id = e.source_id JOIN kg_nodes t ON t.id = e.target_id
           WHERE e.scope = 'g1' AND s.name = 'cat' AND e.relation = 'named'"""
    )
    return {r["name"] for r in rows}


async def test_an_edit_through_the_brain_replaces_the_old_facts(app: App, llm: ScriptedLLM) -> None:
    reply = await app.brain.respond(turn("My cat is called Miso"))
    await reply.complete()
    await app.brain.drain()
    assert await cat_names(app) == {"miso"}
    assert await app.brain.edit("console", "c1", reply.message.external_id, "My cat is called Luna")
    await app.brain.drain()
    assert await cat_names(app) == {"luna"}, "the old text's fact goes, the new text's comes"
    pool = app.db.pool
    assert await pool.fetchval("SELECT count(*) FROM kg_nodes WHERE name = 'miso'") == 0, "nothing left of it"
    bundle = await app.brain.context("what's my cat's name?", "g1", author_id="u-ana")
    assert not any("Miso" in item.text or "miso" in item.text for item in bundle.items()), bundle.items()


async def test_an_edit_while_the_reply_is_still_streaming_wins(app: App, llm: ScriptedLLM) -> None:
    """The edit lands before the turn's write is even queued: the edit's own job finds nothing absorbed, so only
    the write's re-reading of the message keeps the old text out of every layer."""
    llm.delay = 0.05
    reply = await app.brain.respond(turn("My cat is called Miso"))
    stream = reply.__aiter__()
    await stream.__anext__()  # generating
    assert await app.brain.edit("console", "c1", reply.message.external_id, "My cat is called Luna")
    await app.brain.drain()  # the edit's job has run; the turn's write is not queued yet
    await reply.complete()
    await app.brain.drain()
    episode = await app.db.pool.fetchval("SELECT content FROM episodes")
    assert "Luna" in episode and "Miso" not in episode, episode
    assert await cat_names(app) == {"luna"}
