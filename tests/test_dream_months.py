"""Consolidation over weeks (issue 30.1): episodes the graph took over go, their facts stay and stay forgettable."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import App
from memory.conversation import NewMessage

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
CELLO = ["I play the cello in the Leeds Philharmonic.", "I still play the cello in the Leeds Philharmonic."]
EDGE = """SELECT e.id, e.evidence_count FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id
          WHERE e.relation = 'play' AND t.name = 'cello'"""


def history(app: App, path: Path, lines: list[tuple[int, str]]) -> Path:
    """``lines`` (day, text) by Ana as an import file; every line becomes an episode (gate open)."""
    app.importer.gate = replace(app.importer.gate, tau=0.0)
    path.write_text("".join(json.dumps({
        "id": f"m{i}", "channel": "100", "author": {"id": "7", "name": "Ana"},
        "timestamp": (T0 + timedelta(days=day)).isoformat().replace("+00:00", "Z"), "text": text}) + "\n"
        for i, (day, text) in enumerate(lines)))
    return path


async def test_a_fact_said_twice_outlives_its_episodes_and_forgetting_its_messages_still_deletes_it(
        app: App, tmp_path: Path) -> None:
    pool = app.db.pool
    await app.importer.run(history(app, tmp_path / "h.jsonl", [(0, CELLO[0]), (5, CELLO[1])]), "g1")
    ids = [r["id"] for r in await pool.fetch("SELECT id FROM messages WHERE scope = 'g1' ORDER BY created_at")]
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE message_id = ANY($1::bigint[])", ids) == 2
    assert (await pool.fetchrow(EDGE))["evidence_count"] == 2
    first = await app.dream.run(T0 + timedelta(days=6), scope="g1")
    assert first.steps["knowledge_graph_consolidation"].counts["episodes_consolidated"] == 2, first.render()
    later = await app.dream.run(T0 + timedelta(days=6 + 15), scope="g1")
    assert later.steps["episodic_decay"].counts["consolidated"] == 2, later.render()
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE message_id = ANY($1::bigint[])", ids) == 0
    facts = await app.brain.semantic.facts_for("g1", "what does Ana play?", author_id=None, depth=1,
                                               now=T0 + timedelta(days=22))
    assert any(f.relation == "play" and f.object_name == "cello" for f in facts), "the fact outlived its episodes"
    await app.provenance.forget_message("g1", ids[0])
    assert (await pool.fetchrow(EDGE))["evidence_count"] == 1
    await app.provenance.forget_message("g1", ids[1])
    assert await pool.fetchrow(EDGE) is None, "forgetting the source messages deleted the consolidated fact"


async def test_an_episode_whose_fact_was_said_once_stays_after_the_dream(app: App, tmp_path: Path) -> None:
    pool = app.db.pool
    await app.importer.run(history(app, tmp_path / "h.jsonl", [(0, CELLO[0])]), "g1")
    await app.dream.run(T0 + timedelta(days=1), scope="g1")
    report = await app.dream.run(T0 + timedelta(days=20), scope="g1")
    assert report.steps["episodic_decay"].counts["consolidated"] == 0
    assert await pool.fetchval("SELECT count(*) FROM episodes WHERE scope = 'g1'") == 1, "its only evidence stays"


async def test_a_fact_said_once_and_never_confirmed_is_pruned_once_faded_and_a_pinned_one_is_not(app: App) -> None:
    semantic, pool = app.brain.semantic, app.db.pool
    for n, text in enumerate(["I play the oboe.", "I speak Welsh."]):
        m = await app.conversations.add(NewMessage("g1", "console", f"x{n}", "c1", "u-ana", "ana", text, T0))
        await semantic.absorb(m, T0)
        if n == 1:
            await semantic.pin("g1", m.id, T0)
    assert await semantic.prune(T0 + timedelta(days=10), min_retrievability=0.6, min_confidence=0.6) == 0
    assert await semantic.prune(T0 + timedelta(days=90), min_retrievability=0.6, min_confidence=0.6) == 1
    left = [r["name"] for r in await pool.fetch(
        "SELECT t.name FROM kg_edges e JOIN kg_nodes t ON t.id = e.target_id")]
    assert left == ["welsh"], left
